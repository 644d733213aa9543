// Run folders without LibTorch: metrics.jsonl lines, the incremental reader the studio uses to
// follow a run that another process is writing, config.json errors; RunFolder's checkpoints
// (kept, pruned, a damaged one set aside), its one recipe for a copy (export, save as), and what
// the trainer writes through it (records, task, a failed start cleared).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "hsm/run_folder.h"
#include "hsm/safetensors.h"
#include "run/run_json.h"
#include "test_util.h"

namespace fs = std::filesystem;
using namespace hsm;

namespace {

MetricRecord train_record(int64_t step, double loss) {
  MetricRecord m;
  m.kind = "train";
  m.step = step;
  m.total_steps = 100;
  m.epoch = step / 50.0;
  m.train_loss = loss;
  m.tokens_per_s = 1234.5;
  m.lr = 0.002;
  m.wall_s = step * 0.5;
  return m;
}

void append(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::app | std::ios::binary);
  out << text;
}

}  // namespace

TEST(RunFolder, MetricLineRoundTripKeepsValuesAndNaNs) {
  const MetricRecord m = train_record(7, 3.25);
  const MetricRecord r = metric_from_json_line(metric_to_json_line(m));
  EXPECT_EQ(r.kind, "train");
  EXPECT_EQ(r.step, 7);
  EXPECT_EQ(r.total_steps, 100);
  EXPECT_DOUBLE_EQ(r.train_loss, 3.25);
  EXPECT_DOUBLE_EQ(r.tokens_per_s, 1234.5);
  EXPECT_TRUE(std::isnan(r.val_loss));  // not written, read back as NaN
  EXPECT_THROW(metric_from_json_line("{\"loss\": 1}"), std::invalid_argument);
  EXPECT_THROW(metric_from_json_line("not json"), std::invalid_argument);
}

TEST(RunFolder, ReaderReturnsOnlyNewCompleteLines) {
  const std::string dir = test::fresh_temp_dir("run-folder", "reader");
  const std::string path = dir + "/metrics.jsonl";
  MetricsReader reader(dir);
  EXPECT_TRUE(reader.poll().empty());  // no file yet
  append(path, metric_to_json_line(train_record(1, 5.0)) + "\n" + metric_to_json_line(train_record(2, 4.0)) + "\n");
  auto got = reader.poll();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].step, 2);
  // A writer mid-line: the half line waits until it is complete.
  const std::string third = metric_to_json_line(train_record(3, 3.5));
  append(path, third.substr(0, 10));
  EXPECT_TRUE(reader.poll().empty());
  append(path, third.substr(10) + "\n");
  got = reader.poll();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_DOUBLE_EQ(got[0].train_loss, 3.5);
  EXPECT_FALSE(reader.reset());
  // A resume rewrites the file shorter: read again from the start, and say so.
  { std::ofstream out(path, std::ios::trunc); out << metric_to_json_line(train_record(1, 5.0)) << "\n"; }
  got = reader.poll();
  EXPECT_TRUE(reader.reset());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].step, 1);
  EXPECT_EQ(read_metrics(dir).size(), 1u);
}

TEST(RunFolder, NotARunFolderIsNamed) {
  const std::string dir = test::fresh_temp_dir("run-folder", "bad");
  EXPECT_FALSE(is_run_folder(dir));
  try {
    read_run_info(dir);
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("not a run folder"), std::string::npos) << e.what();
  }
  append(dir + "/config.json", "{\"format\": \"hsm-studio/1\"}");
  EXPECT_THROW(read_run_info(dir), std::runtime_error);  // no model
}

TEST(RunFolder, ReaderTakesALongHistoryInSlices) {
  const std::string dir = test::fresh_temp_dir("run-folder", "slices");
  std::string text;
  for (int i = 1; i <= 4000; ++i) text += metric_to_json_line(train_record(i, 1.0 / i)) + "\n";
  append(dir + "/metrics.jsonl", text);
  MetricsReader reader(dir);
  std::vector<MetricRecord> all;
  int polls = 0;
  do {
    auto part = reader.poll(4096);
    all.insert(all.end(), part.begin(), part.end());
    ++polls;
  } while (reader.more() && polls < 10000);
  EXPECT_GT(polls, 5);  // slices of at least MetricsReader::kMaxLineBytes
  ASSERT_EQ(all.size(), 4000u);
  for (int i = 0; i < 4000; ++i) EXPECT_EQ(all[i].step, i + 1);
  EXPECT_TRUE(reader.poll(4096).empty());
  EXPECT_FALSE(reader.more());
}

// A line that parses as JSON but is no record is refused with the reason, never with the JSON
// library's own text: a "step" given as text stopped a run from opening before.
TEST(RunFolder, MetricLinesOfTheWrongShapeAreRefusedWithTheReason) {
  auto reason = [](const std::string& line) {
    try {
      metric_from_json_line(line);
      return std::string("accepted");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
  };
  EXPECT_NE(reason(R"({"kind": "train", "step": "12"})").find("\"step\" is not a whole number"), std::string::npos);
  EXPECT_NE(reason(R"({"kind": "train", "step": 1.5})").find("\"step\" is not a whole number"), std::string::npos);
  EXPECT_NE(reason(R"({"kind": "train", "step": -3})").find("negative"), std::string::npos);
  EXPECT_NE(reason(R"({"kind": 4, "step": 1})").find("\"kind\""), std::string::npos);
  EXPECT_NE(reason(R"({"kind": "train", "step": 1, "train_loss": "low"})").find("\"train_loss\" is not a number"),
            std::string::npos);
  EXPECT_NE(reason("[1, 2]").find("not a JSON object"), std::string::npos);
  EXPECT_EQ(reason(R"({"kind": "train", "step": 2, "train_loss": null})"), "accepted");  // null: no value
}

// A damaged metrics.jsonl: the bad lines are skipped and named with their line numbers, the
// good ones around them are kept, and the reader moves on at every poll: a 1 MB unfinished
// last line made the studio re-read the same bytes forever (98% CPU) before.
TEST(RunFolder, ReaderSkipsAndNamesDamagedLinesAndNeverSpins) {
  const std::string dir = test::fresh_temp_dir("run-folder", "damaged");
  const std::string path = dir + "/metrics.jsonl";
  append(path, metric_to_json_line(train_record(1, 5.0)) + "\n");
  append(path, R"({"kind": "train", "step": "2", "train_loss": 4.0})" "\n");
  append(path, "garbage\n");
  append(path, metric_to_json_line(train_record(4, 3.0)) + "\n");
  append(path, std::string(1 << 20, 'x'));  // 1 MB, no newline yet
  MetricsReader reader(dir);
  std::vector<MetricRecord> all;
  std::vector<std::string> problems;
  int polls = 0;
  do {
    auto part = reader.poll(4096);
    all.insert(all.end(), part.begin(), part.end());
    problems.insert(problems.end(), reader.problems().begin(), reader.problems().end());
    ASSERT_LT(++polls, 1000) << "the reader does not move on";
  } while (reader.more());
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].step, 1);
  EXPECT_EQ(all[1].step, 4);
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_NE(problems[0].find("metrics.jsonl line 2: not a metrics record: \"step\" is not a whole number"),
            std::string::npos)
      << problems[0];
  EXPECT_NE(problems[1].find("line 3: not a metrics record"), std::string::npos) << problems[1];
  EXPECT_NE(problems[2].find("line 5: longer than 64 KiB and unfinished"), std::string::npos) << problems[2];
  EXPECT_EQ(reader.skipped(), 3);
  EXPECT_TRUE(reader.poll(4096).empty());  // nothing new: no work, no new problems
  EXPECT_TRUE(reader.problems().empty());
  // The long line ends; the records after it are read, the rest of it is not taken for one.
  append(path, std::string(1000, 'y') + "\n" + metric_to_json_line(train_record(6, 2.0)) + "\n");
  all = reader.poll(4096);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].step, 6);
  EXPECT_TRUE(reader.problems().empty());
  // A complete line over the limit is one problem, named.
  append(path, std::string(100 * 1024, 'z') + "\n" + metric_to_json_line(train_record(8, 1.0)) + "\n");
  all = reader.poll();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].step, 8);
  ASSERT_EQ(reader.problems().size(), 1u);
  EXPECT_NE(reader.problems()[0].find("line 7: longer than 64 KiB"), std::string::npos) << reader.problems()[0];
}

// ---- RunFolder: the one owner of a run folder's checkpoints and copies (issue 47) ----------------
namespace {

// A checkpoint's config.json of `step` as the trainer writes it (run_config_text).
std::string config_of_step(int64_t step) {
  ModelConfig m;
  m.vocab_size = 300;
  m.d_model = 32;
  m.context = 32;
  m.layers = {LayerSpec{}};
  RunRecord r;
  r.model_json = to_json(m);
  r.step = step;
  r.total_steps = 100;
  return run_config_text(r);
}

// Stand-ins for the tensors the trainer writes (LibTorch is not needed to test the folder).
void write_fake_tensors(const RunFolder::Checkpoint& c, int64_t step) {
  TensorBlob w;
  w.name = "w";
  w.dtype = "F32";
  w.shape = {1};
  w.data.assign(4, static_cast<char>(step));
  write_safetensors(c.weights, {w}, {{"step", std::to_string(step)}});
  write_safetensors(c.optimizer, {w}, {{"step", std::to_string(step)}});
}

std::string text_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST(RunFolderCheckpoints, TheNewestTwoAreKeptAndTheTopLevelFilesAreTheNewests) {
  const RunFolder run(test::fresh_temp_dir("run-folder", "checkpoints"));
  for (int64_t step : {0, 10, 20, 30})
    run.write_checkpoint(step, config_of_step(step),
                         [step](const RunFolder::Checkpoint& c) { write_fake_tensors(c, step); });
  std::vector<std::string> kept;
  for (const auto& e : fs::directory_iterator(run.checkpoints)) kept.push_back(e.path().filename().string());
  std::sort(kept.begin(), kept.end());
  EXPECT_EQ(kept, (std::vector<std::string>{"step-000000000020", "step-000000000030"}));
  const auto latest = run.latest_checkpoint();
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->step, 30);
  EXPECT_EQ(text_of(run.config), config_of_step(30));
  EXPECT_EQ(text_of(run.weights), text_of(latest->weights));
  EXPECT_EQ(read_run_info(run.dir).step, 30);
  // The same step again (a stop right after a periodic checkpoint): its tensors stay, its record is new.
  bool wrote = false;
  run.write_checkpoint(30, config_of_step(30) + " ", [&](const RunFolder::Checkpoint&) { wrote = true; });
  EXPECT_FALSE(wrote);
  EXPECT_EQ(text_of(run.config), config_of_step(30) + " ");
}

TEST(RunFolderCheckpoints, ADamagedNewestIsPassedOverAndSetAside) {
  const RunFolder run(test::fresh_temp_dir("run-folder", "damaged-checkpoint"));
  for (int64_t step : {10, 20})
    run.write_checkpoint(step, config_of_step(step),
                         [step](const RunFolder::Checkpoint& c) { write_fake_tensors(c, step); });
  const std::string newest = run.latest_checkpoint()->dir;
  std::ofstream(newest + "/optimizer.safetensors", std::ios::trunc) << "half";
  std::vector<std::string> log;
  const auto from = run.resume_checkpoint([&](const std::string& l) { log.push_back(l); });
  ASSERT_TRUE(from.has_value());
  EXPECT_EQ(from->step, 10);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_NE(log[0].find("step 20 passed over"), std::string::npos) << log[0];
  EXPECT_FALSE(fs::exists(newest));
  EXPECT_TRUE(fs::exists(run.checkpoints + "/damaged-step-000000000020"));
}

// Export and "save as" write their copy by this one recipe: the weights the caller writes, the
// run's tokenizer (or a task run's task.json), its metrics and the new config; a folder replaced whole.
TEST(RunFolderCopy, ACopyHasTheWeightsGivenTheRunsTokenizerOrTaskItsMetricsAndTheNewConfig) {
  const std::string root = test::fresh_temp_dir("run-folder", "copy");
  const RunFolder corpus_run(root + "/corpus"), task_run(root + "/task");
  for (const RunFolder* r : {&corpus_run, &task_run}) {
    fs::create_directories(r->dir);
    std::ofstream(r->metrics) << "{\"kind\":\"train\",\"step\":1}\n";
  }
  std::ofstream(corpus_run.tokenizer) << "sentencepiece bytes";
  std::ofstream(task_run.task) << "{\"task\": \"mqar\"}\n";

  const RunFolder out(root + "/out");
  fs::create_directories(out.dir);
  std::ofstream(out.dir + "/earlier") << "an earlier copy's file";
  corpus_run.publish_copy(out.dir, "{\"copy\": 1}\n", [](const std::string& w) { std::ofstream(w) << "weights"; });
  EXPECT_EQ(text_of(out.weights), "weights");
  EXPECT_EQ(text_of(out.tokenizer), "sentencepiece bytes");
  EXPECT_EQ(text_of(out.metrics), text_of(corpus_run.metrics));
  EXPECT_EQ(text_of(out.config), "{\"copy\": 1}\n");
  EXPECT_FALSE(fs::exists(out.task));
  EXPECT_FALSE(fs::exists(out.dir + "/earlier"));  // replaced whole, never mixed

  const RunFolder task_out(root + "/task_out");
  task_run.publish_copy(task_out.dir, "{}\n", [](const std::string& w) { std::ofstream(w) << "w"; });
  EXPECT_EQ(text_of(task_out.task), text_of(task_run.task));
  EXPECT_FALSE(fs::exists(task_out.tokenizer));

  // A failed weights writer leaves the destination as it was and no temporary beside it.
  EXPECT_THROW(corpus_run.publish_copy(out.dir, "{}\n", [](const std::string&) { throw std::runtime_error("disk full"); }),
               std::runtime_error);
  EXPECT_EQ(text_of(out.weights), "weights");
  for (const auto& e : fs::directory_iterator(root))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
}

// The trainer appends its metrics through the folder (issue 66): a new run's file starts afresh,
// a resumed run's holds what it kept and goes on; each line is metric_to_json_line's.
TEST(RunFolderWrites, MetricsStartAfreshOrGoOnFromWhatWasKept) {
  const std::string dir = test::fresh_temp_dir("run-folder", "write-metrics");
  RunFolder folder(dir);
  append(folder.metrics, "a killed start's line\n");
  folder.start_metrics(std::nullopt);  // a new run
  EXPECT_EQ(text_of(folder.metrics), "");
  EXPECT_EQ(folder.append_metric(train_record(1, 5.0)), "");
  RunFolder copy = folder;  // copies share the started file
  EXPECT_EQ(copy.append_metric(train_record(2, 4.0)), "");
  const std::string two =
      metric_to_json_line(train_record(1, 5.0)) + "\n" + metric_to_json_line(train_record(2, 4.0)) + "\n";
  EXPECT_EQ(text_of(folder.metrics), two);

  RunFolder resumed(dir);
  EXPECT_THROW(resumed.append_metric(train_record(3, 3.0)), std::logic_error);  // not started
  const std::string kept = metric_to_json_line(train_record(1, 5.0)) + "\n";
  resumed.start_metrics(kept);
  EXPECT_EQ(text_of(folder.metrics), kept);
  EXPECT_EQ(resumed.append_metric(train_record(2, 3.5)), "");
  EXPECT_EQ(text_of(folder.metrics), kept + metric_to_json_line(train_record(2, 3.5)) + "\n");
  EXPECT_EQ(read_metrics(dir).size(), 2u);
}

// The recorder's diagnoses the same way; a new run that records none has no file at all.
TEST(RunFolderWrites, DiagnosesStartAfreshOrGoOnAndANewRunThatRecordsNoneHasNoFile) {
  const std::string dir = test::fresh_temp_dir("run-folder", "write-diagnoses");
  RunFolder folder(dir);
  append(folder.diagnostics, "{\"step\": 9}\n");
  folder.start_diagnoses(std::nullopt, false);
  EXPECT_FALSE(fs::exists(folder.diagnostics));
  EXPECT_THROW(folder.append_diagnosis("{\"step\": 1}"), std::logic_error);

  folder.start_diagnoses(std::nullopt, true);
  EXPECT_EQ(text_of(folder.diagnostics), "");
  EXPECT_EQ(folder.append_diagnosis("{\"step\": 1}"), "");
  EXPECT_EQ(text_of(folder.diagnostics), "{\"step\": 1}\n");

  RunFolder resumed(dir);
  resumed.start_diagnoses(std::string("{\"step\": 0}\n"), false);  // kept, nothing more recorded
  EXPECT_EQ(text_of(folder.diagnostics), "{\"step\": 0}\n");
  resumed.start_diagnoses(std::string("{\"step\": 0}\n"), true);
  EXPECT_EQ(resumed.append_diagnosis("{\"step\": 2}"), "");
  EXPECT_EQ(text_of(folder.diagnostics), "{\"step\": 0}\n{\"step\": 2}\n");
}

// A record file that is a link is never written through (the file it points to stays as it was).
TEST(RunFolderWrites, ARecordFileThatIsALinkIsRefused) {
  const std::string dir = test::fresh_temp_dir("run-folder", "write-link");
  const std::string outside = test::fresh_temp_dir("run-folder", "write-link-outside") + "/theirs.jsonl";
  append(outside, "theirs\n");
  RunFolder folder(dir);
  fs::create_symlink(outside, folder.metrics);
  EXPECT_THROW(folder.start_metrics(std::nullopt), std::runtime_error);
  EXPECT_EQ(text_of(outside), "theirs\n");
}

TEST(RunFolderWrites, TheTaskIsWrittenAsRunTaskReadsItAndAFailedStartIsCleared) {
  const std::string dir = test::fresh_temp_dir("run-folder", "write-task");
  RunFolder folder(dir);
  folder.write_task("mqar:pairs=4");
  EXPECT_EQ(text_of(folder.task), "{\n  \"task\": \"mqar:pairs=4\"\n}\n");
  EXPECT_EQ(run_task(dir), "mqar:pairs=4");

  // A failed start in a folder the run did not make: its own files go, the user's stay.
  folder.start_metrics(std::nullopt);
  append(folder.config, "{}");
  fs::create_directories(folder.checkpoints + "/step-1");
  append(dir + "/notes.txt", "mine");
  folder.clear(false);
  for (const std::string& f : {folder.task, folder.metrics, folder.config, folder.checkpoints})
    EXPECT_FALSE(fs::exists(f)) << f;
  EXPECT_EQ(text_of(dir + "/notes.txt"), "mine");
  folder.clear(true);  // the run made the folder: all of it goes
  EXPECT_FALSE(fs::exists(dir));
}
