// Never destroy a user's file (issue 46): what `hsm export`, `hsm eval --per-token`, the readers
// of small files and a resumed run do with a user's files, each reproduction of the issue run
// against the real `hsm` on a tiny model. Every test here failed on the code before the fix
// (docs/safety.md lists what each command writes).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tiny_run.h"

namespace fs = std::filesystem;

namespace {

class HostileFiles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = (fs::temp_directory_path() / ("hsm-hostile-files-" + std::to_string(::getpid()))).string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    write_tiny_run_inputs(dir_, 5, 0.0);
    // The run every test copies: 12 steps, checkpoints at 8 and 12.
    const Result r = shell(hsm() + " train --config '" + dir_ + "/tiny.json' --out '" + dir_ + "/base'" + common() +
                           " --steps 12 --batch 8 --checkpoint-every 4 --eval-every 6 --eval-batches 1 --log-every 2 "
                           "--seed 3");
    ASSERT_EQ(r.exit_code, 0) << r.out;
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  static std::string hsm() { return std::string("env HSM_RESOURCES='") + HSM_RESOURCES_PATH + "' '" + HSM_CLI_PATH + "'"; }
  static std::string common() {
    return " --data '" + dir_ + "/stories.txt' --cache-dir '" + dir_ + "/cache' --threads 1";
  }
  // A copy of the base run, to point commands at.
  static std::string copy_of_base(const std::string& name) {
    const std::string run = dir_ + "/" + name;
    fs::remove_all(run);
    fs::copy(dir_ + "/base", run, fs::copy_options::recursive);
    return run;
  }
  static bool has(const Result& r, const std::string& text) { return r.out.find(text) != std::string::npos; }
  // Every regular file under `dir` with its bytes, to compare before and after.
  static std::map<std::string, std::string> contents(const std::string& dir) {
    std::map<std::string, std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(dir))
      if (e.is_regular_file()) files[fs::relative(e.path(), dir).string()] = read_file(e.path().string());
    return files;
  }
  // A task run (task.json, no tokenizer) in dir_/name: two attention layers at d 32.
  static std::string task_run(const std::string& name) {
    const std::string run = dir_ + "/" + name, config = dir_ + "/attn2.json";
    std::ofstream(config) << R"({"name": "attn2", "vocab_size": 32, "d_model": 32, "context": 16, "dropout": 0,
      "layers": [{"mixer": "attn", "ffn": 64, "heads": 4}, {"mixer": "attn", "ffn": 64, "heads": 4}]})";
    const Result r = shell(hsm() + " train --task mqar:vocab=32,pairs=2,context=16 --config '" + config + "' --out '" +
                           run + "' --steps 4 --batch 8 --eval-every 4 --threads 1 --device cpu");
    EXPECT_EQ(r.exit_code, 0) << r.out;
    return run;
  }

  static std::string dir_;
};

std::string HostileFiles::dir_;

// 1. `hsm export A --out B` once deleted B whenever B held a config.json, exit 0: a user's
// project folder, a training run with its checkpoints, the folder holding A itself. Now a
// folder that is not an earlier export is replaced only with --force, and never one that holds
// a run's checkpoints or A.
TEST_F(HostileFiles, ExportNeverDeletesWhatItDidNotWrite) {
  const std::string base = dir_ + "/base";
  // A user's project folder with a config.json.
  const std::string project = dir_ + "/project";
  fs::create_directories(project + "/notes");
  std::ofstream(project + "/config.json") << R"({"my": "settings"})";
  std::ofstream(project + "/notes/thesis.txt") << "three years of work";
  const auto project_before = contents(project);
  Result r = shell(hsm() + " export '" + base + "' --out '" + project + "'");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(has(r, "holds files that are not an earlier export")) << r.out;
  EXPECT_TRUE(has(r, "--force")) << r.out;
  EXPECT_EQ(contents(project), project_before) << "the project folder was changed";

  // A training run (its checkpoints, optimizer state): refused even with --force.
  const std::string run = copy_of_base("victim-run");
  const auto run_before = contents(run);
  for (const std::string force : {"", " --force"}) {
    r = shell(hsm() + " export '" + base + "' --out '" + run + "'" + force);
    EXPECT_EQ(r.exit_code, 1) << force << "\n" << r.out;
    EXPECT_EQ(contents(run), run_before) << "a run folder was changed by an export" << force;
  }
  EXPECT_TRUE(has(r, "never replaced, even with --force")) << r.out;
  EXPECT_TRUE(has(r, "checkpoints")) << r.out;

  // The folder that holds the run being exported: refused even with --force.
  const std::string parent = dir_ + "/parent";
  fs::create_directories(parent);
  fs::copy(base, parent + "/A", fs::copy_options::recursive);
  std::ofstream(parent + "/config.json") << "{}";
  const auto parent_before = contents(parent);
  r = shell(hsm() + " export '" + parent + "/A' --out '" + parent + "' --force");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(has(r, "holds the run being exported")) << r.out;
  EXPECT_EQ(contents(parent), parent_before);

  // A link is never written through (nor replaced).
  fs::create_directory_symlink(project, dir_ + "/link-to-project");
  r = shell(hsm() + " export '" + base + "' --out '" + dir_ + "/link-to-project' --force");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(has(r, "symbolic link")) << r.out;
  EXPECT_EQ(contents(project), project_before);

  // A new folder, then an earlier export replaced without --force; the user's project folder
  // with --force (the user said so): the export, and no temporary left beside it.
  const std::string out = dir_ + "/exported";
  EXPECT_EQ(shell(hsm() + " export '" + base + "' --out '" + out + "'").exit_code, 0);
  r = shell(hsm() + " export '" + base + "' --out '" + out + "' --dtype f32");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(read_file(out + "/config.json").find("\"F32\""), std::string::npos);
  r = shell(hsm() + " export '" + base + "' --out '" + project + "' --force");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_FALSE(fs::exists(project + "/notes"));
  EXPECT_TRUE(fs::exists(project + "/model.safetensors"));
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
}

// 2. `hsm eval --per-token FILE` once overwrote FILE in place, whatever it was: pointed at
// RUN/model.safetensors it destroyed the newest checkpoint too (a hard link to one file) and a
// resume restarted from step 0; pointed at the corpus, the corpus was gone.
TEST_F(HostileFiles, PerTokenNeverOverwritesWhatItDidNotWrite) {
  const std::string run = copy_of_base("per-token");
  const std::string eval = hsm() + " eval '" + run + "' --max-batches 1" + common();
  const auto run_before = contents(run);
  for (const std::string force : {"", " --force"}) {
    Result r = shell(eval + " --per-token '" + run + "/model.safetensors'" + force);
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_TRUE(has(r, "inside the run folder")) << r.out;
    r = shell(eval + " --per-token '" + run + "/checkpoints/step-000000000012/model.safetensors'" + force);
    EXPECT_EQ(r.exit_code, 1) << r.out;
    r = shell(eval + " --per-token '" + dir_ + "/base/metrics.jsonl'" + force);  // another run's
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_TRUE(has(r, "inside the run folder '" + dir_ + "/base'")) << r.out;
    r = shell(eval + " --per-token '" + dir_ + "/stories.txt'" + force);
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_TRUE(has(r, "an input of this command")) << r.out;
  }
  EXPECT_EQ(contents(run), run_before) << "the run folder was changed by an evaluation";
  const Result resumed = shell(hsm() + " train --resume --out '" + run + "'" + common() + " --steps 14");
  EXPECT_EQ(resumed.exit_code, 0) << resumed.out;
  EXPECT_TRUE(has(resumed, "at step 12")) << resumed.out;

  // Another file of the user's: only with --force, and then replaced, never written through: a
  // hard link elsewhere to a checkpoint's weights leaves the checkpoint as it was.
  const std::string mine = dir_ + "/mine.jsonl";
  std::ofstream(mine) << "mine\n";
  Result r = shell(eval + " --per-token '" + mine + "'");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(has(r, "exists")) << r.out;
  EXPECT_EQ(read_file(mine), "mine\n");
  const std::string weights = dir_ + "/base/checkpoints/step-000000000012/model.safetensors";
  const std::string weights_bytes = read_file(weights);
  fs::create_hard_link(weights, dir_ + "/hard-link.jsonl");
  r = shell(eval + " --per-token '" + dir_ + "/hard-link.jsonl' --force");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(read_file(weights) == weights_bytes) << "written through a hard link";
  const std::string written = read_file(dir_ + "/hard-link.jsonl");
  ASSERT_FALSE(written.empty());
  EXPECT_TRUE(nlohmann::json::parse(written.substr(0, written.find('\n')), nullptr, false).is_object());
  // A new file: written, no temporary left.
  r = shell(eval + " --per-token '" + dir_ + "/new.jsonl'");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(fs::is_regular_file(dir_ + "/new.jsonl"));
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
}

// The same rule for `hsm tokenizer train --out FILE`, which once replaced whatever FILE was: the
// corpus it was trained on, a run's tokenizer.model (the one its ids mean).
TEST_F(HostileFiles, TokenizerTrainNeverReplacesWhatItDidNotWrite) {
  const std::string corpus = dir_ + "/tokenizer-corpus.txt";
  fs::copy_file(dir_ + "/stories.txt", corpus);
  const std::string train = hsm() + " tokenizer train --data '" + corpus + "' --vocab 300 --threads 1 --out ";
  const std::string run = copy_of_base("tokenizer-run");
  const auto run_before = contents(run);
  for (const std::string force : {"", " --force"}) {
    Result r = shell(train + "'" + corpus + "'" + force);
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_TRUE(has(r, "an input of this command")) << r.out;
    r = shell(train + "'" + run + "/tokenizer.model'" + force);
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_TRUE(has(r, "inside the run folder")) << r.out;
  }
  EXPECT_TRUE(read_file(corpus) == read_file(dir_ + "/stories.txt")) << "the corpus was replaced";
  EXPECT_EQ(contents(run), run_before);
  const std::string mine = dir_ + "/my.model";
  std::ofstream(mine) << "mine";
  Result r = shell(train + "'" + mine + "'");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(read_file(mine), "mine");
  r = shell(train + "'" + mine + "' --force");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(read_file(mine), "mine");
}

// 10. A FIFO or /dev/zero where a small JSON file is expected: eval, diagnose and probe hung on
// a FIFO task.json, and grew memory on /dev/zero. Now refused at once, naming the file.
TEST_F(HostileFiles, AFifoOrADeviceIsRefusedAtOnce) {
  const std::string fifo_run = copy_of_base("fifo-task");
  ASSERT_EQ(::mkfifo((fifo_run + "/task.json").c_str(), 0644), 0);
  const std::string zero_run = copy_of_base("zero-task");
  fs::create_symlink("/dev/zero", zero_run + "/task.json");
  for (const auto& [run, kind] : {std::pair{fifo_run, std::string("FIFO")}, {zero_run, std::string("a device")}})
    for (const std::string command : {"eval", "diagnose", "probe"}) {
      const std::string extra = command == "eval" ? " --max-batches 1" + common() : " --prompt 'Once upon'";
      const Result r = shell("timeout 60 " + hsm() + " " + command + " '" + run + "'" + extra);
      EXPECT_EQ(r.exit_code, 1) << command << " " << kind << "\n" << r.out;
      EXPECT_TRUE(has(r, run + "/task.json")) << command << "\n" << r.out;
      EXPECT_TRUE(has(r, kind)) << command << "\n" << r.out;
    }
  // A run's config.json that is a FIFO.
  const std::string fifo_config = copy_of_base("fifo-config");
  fs::remove(fifo_config + "/config.json");
  ASSERT_EQ(::mkfifo((fifo_config + "/config.json").c_str(), 0644), 0);
  const Result r = shell("timeout 60 " + hsm() + " eval '" + fifo_config + "' --max-batches 1" + common());
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(has(r, "FIFO")) << r.out;
}

// 10. `hsm task sample` of 100,000 examples of 32,768 tokens ended in an uncaught std::bad_alloc
// (SIGABRT); now the size is checked first, and the error names the limit.
TEST_F(HostileFiles, AHugeTaskSampleIsRefusedBeforeItIsMade) {
  const Result r = shell("ulimit -v 4000000; { timeout 120 " + hsm() +
                         " task sample mqar:vocab=65536,pairs=16,context=32768 --n 100000 --json > /dev/null; }");
  EXPECT_EQ(r.signal, 0) << r.out;
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(has(r, "tokens `hsm task sample` prints at once: give --n 512 or fewer")) << r.out;
  // The same task, a size that is allowed, streams out as one JSON document.
  const Result ok = shell(hsm() + " task sample mqar:vocab=65536,pairs=16,context=32768 --n 2 --json");
  ASSERT_EQ(ok.exit_code, 0) << ok.out.substr(0, 400);
  const auto j = nlohmann::json::parse(ok.out, nullptr, false);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["examples"].size(), 2u);
  EXPECT_EQ(j["examples"][1]["tokens"].size(), 32768u);
  EXPECT_EQ(j["task"].get<std::string>().rfind("mqar:", 0), 0u);
}

// 12. A settings fix that cannot be taken ("use vocab 65537 to 65536") names one that can.
TEST_F(HostileFiles, ARefusedTaskNamesAFixThatExists) {
  const Result r = shell(hsm() + " task sample mqar:vocab=65536,pairs=16,context=65536 --n 1");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_FALSE(has(r, "65537")) << r.out;
  EXPECT_TRUE(has(r, "vocab is at most 65536: use a context below it")) << r.out;
}

// 12. A resumed finished run once printed "val loss nan ... -9223372036854775808 tok/s": it says
// it is finished, with its own numbers, and exits 0.
TEST_F(HostileFiles, AFinishedRunResumedSaysSoWithItsNumbers) {
  const std::string run = copy_of_base("finished");
  const Result r = shell(hsm() + " train --resume --out '" + run + "'" + common() + " --steps 12");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(has(r, "the run is finished at step 12")) << r.out;
  EXPECT_TRUE(has(r, "finished at step 12/12")) << r.out;
  EXPECT_FALSE(has(r, "nan")) << r.out;
  EXPECT_FALSE(has(r, "-9223372036854775808")) << r.out;
  EXPECT_TRUE(has(r, "val loss ")) << r.out;
  EXPECT_TRUE(has(r, " tok/s")) << r.out;
}

// 12. A task run exports (its task.json, no tokenizer: "tokenizer.model is missing" before),
// and a task.json of a bigger vocabulary than the model is named ("index out of range in self").
TEST_F(HostileFiles, TaskRunsExportAndAMismatchedTaskIsNamed) {
  const std::string run = task_run("task-run");
  Result r = shell(hsm() + " export '" + run + "' --out '" + dir_ + "/task-export'");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(fs::is_regular_file(dir_ + "/task-export/task.json"));
  EXPECT_FALSE(fs::exists(dir_ + "/task-export/tokenizer.model"));
  r = shell(hsm() + " eval '" + dir_ + "/task-export' --examples 20 --json");
  EXPECT_EQ(r.exit_code, 0) << r.out;

  std::ofstream(run + "/task.json") << R"({"task": "mqar:vocab=64,pairs=2,context=16"})";
  for (const std::string& command : {"eval '" + run + "' --examples 20", "diagnose '" + run + "' --example 1",
                                    "export '" + run + "' --out '" + dir_ + "/task-export-2'"}) {
    r = shell(hsm() + " " + command);
    EXPECT_EQ(r.exit_code, 1) << command << "\n" << r.out;
    EXPECT_TRUE(has(r, run + "/task.json does not match the run's model")) << command << "\n" << r.out;
    EXPECT_FALSE(has(r, "index out of range")) << r.out;
  }
}

// 12. `hsm generate` once sampled from NaN scores with exit 0: huge embeddings (3e38, finite,
// so they load) overflow to NaN, and the fast decoder's output layer turned the NaN into equal
// finite scores, every token at probability 1/vocab. Now an error naming it, exit 1.
TEST_F(HostileFiles, GenerateNeverSamplesFromNaN) {
  const std::string run = copy_of_base("nan-logits");
  std::string bytes = read_file(run + "/model.safetensors");
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  const auto header = nlohmann::json::parse(bytes.substr(8, header_len));
  const auto& t = header["tok_emb.weight"];
  ASSERT_EQ(t["dtype"], "F32");
  const float huge = 3e38f;
  for (uint64_t at = 8 + header_len + t["data_offsets"][0].get<uint64_t>();
       at < 8 + header_len + t["data_offsets"][1].get<uint64_t>(); at += 4)
    std::memcpy(&bytes[at], &huge, 4);
  fs::remove(run + "/model.safetensors");  // a hard link to the checkpoint's
  std::ofstream(run + "/model.safetensors", std::ios::binary) << bytes;
  for (const std::string options : {"", " --json", " --temperature 0"}) {
    const Result r = shell(hsm() + " generate '" + run + "' --prompt 'Once upon' --max-tokens 4 --seed 1" + options);
    EXPECT_EQ(r.exit_code, 1) << options << "\n" << r.out;
    EXPECT_TRUE(has(r, "not finite")) << options << "\n" << r.out;
  }
}

// ---- Issue 65: the user's values in the user's words; nothing cut or wrapped without a word.

class HostileWords : public HostileFiles {
 protected:
  // The subcommands of `hsm` (and theirs), as paths ("task sample"), from the help texts.
  static std::vector<std::string> command_paths(const std::string& path = "") {
    const Result help = shell(hsm() + " " + path + " --help");
    std::vector<std::string> paths;
    bool in_list = false;
    std::istringstream lines(help.out);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("Subcommands:", 0) == 0) {
        in_list = true;
        continue;
      }
      std::smatch m;
      if (in_list && std::regex_search(line, m, std::regex("^  ([a-z]+) "))) {
        const std::string sub = path.empty() ? m[1].str() : path + " " + m[1].str();
        paths.push_back(sub);
        for (const std::string& deeper : command_paths(sub)) paths.push_back(deeper);
      } else if (in_list && line.empty()) {
        in_list = false;
      }
    }
    return paths;
  }
  // A command's options that take a number (INT, UINT, FLOAT, NUMBER in its help).
  static std::vector<std::pair<std::string, std::string>> numeric_options(const std::string& path) {
    const Result help = shell(hsm() + " " + path + " --help");
    std::vector<std::pair<std::string, std::string>> options;
    std::istringstream lines(help.out);
    const std::regex option("^  (?:-[a-zA-Z],)?(--[a-z0-9-]+) (INT|UINT|FLOAT|NUMBER)\\b");
    for (std::string line; std::getline(lines, line);) {
      std::smatch m;
      if (std::regex_search(line, m, option)) options.emplace_back(m[1].str(), m[2].str());
    }
    return options;
  }
  // The longest run of digits in `text` (CLI11's bound of a double's range is 300 of them).
  static size_t longest_number(const std::string& text) {
    size_t longest = 0, run = 0;
    for (char c : text) {
      run = std::isdigit(static_cast<unsigned char>(c)) ? run + 1 : 0;
      longest = std::max(longest, run);
    }
    return longest;
  }
};

// Every option that takes a number refuses NaN, a value beyond what it can hold and -1 (where
// refused) in words: the flag named, the range to use, never a 300-digit bound. On the old code
// --threshold nan traced "edges >= nan", --stop-accuracy nan meant "off", --seed -1 was 2^64 - 1
// and --answer-position -1 printed CLI11's [0 - 1.79769e+308] written out.
TEST_F(HostileWords, EveryNumericOptionRefusesNaNAndHugeValuesInWords) {
  const std::string run = dir_ + "/base";
  // What each command needs before its options (a run folder, a preset, a task); the options are
  // checked before the command runs, so nothing else is given.
  const std::map<std::string, std::string> operands = {
      {"inspect", "gpt"},           {"eval", "'" + run + "'"},       {"generate", "'" + run + "'"},
      {"diagnose", "'" + run + "'"}, {"probe", "'" + run + "'"},     {"trace", "'" + run + "'"},
      {"ablate", "'" + run + "'"},   {"compare", "'" + run + "' '" + run + "'"},
      {"weights", "'" + run + "'"},  {"export", "'" + run + "'"},    {"task sample", "parity"},
      {"lab report", "'" + dir_ + "'"}, {"lab convert", "'" + dir_ + "'"}, {"sweep run", "'" + dir_ + "'"},
      {"sweep table", "'" + dir_ + "'"}, {"train", "--out '" + dir_ + "/never'"},
      {"bench", "--model no-such-model"}, {"tokenizer train", "--data '" + dir_ + "/stories.txt' --out '" + dir_ +
                                                                  "/never.model'"}};
  // One value an option: NaN for a real number, one past int64 for a whole number (what CLI11
  // would have cut, wrapped or printed as a 300-digit bound); run three at a time.
  std::vector<std::pair<std::string, std::string>> commands;  // command, the option
  for (const std::string& path : command_paths()) {
    const auto found = operands.find(path);
    const std::string before = found == operands.end() ? "" : " " + found->second;
    for (const auto& [flag, type] : numeric_options(path)) {
      const bool whole = type == "INT" || type == "UINT";
      commands.emplace_back(path + before + " " + flag + " " + (whole ? "99999999999999999999999" : "nan"), flag);
    }
  }
  std::vector<Result> results(commands.size());
  for (size_t first = 0; first < commands.size(); first += 3) {
    std::vector<std::thread> batch;
    for (size_t i = first; i < std::min(first + 3, commands.size()); ++i)
      batch.emplace_back([&, i] { results[i] = shell(hsm() + " " + commands[i].first + " </dev/null"); });
    for (std::thread& t : batch) t.join();
  }
  for (size_t i = 0; i < commands.size(); ++i) {
    const auto& [command, flag] = commands[i];
    const Result& r = results[i];
    if (r.out.find("more than this machine's") != std::string::npos) continue;  // --threads: capped, said
    EXPECT_LT(longest_number(r.out), 30u) << command << "\n" << r.out;
    EXPECT_EQ(r.exit_code, 1) << command << "\n" << r.out;
    EXPECT_NE(r.out.find(flag), std::string::npos) << command << ": the refusal does not name the option\n" << r.out;
    EXPECT_NE(r.out.find("use "), std::string::npos) << command << ": no range in words\n" << r.out;
    if (command.find(" nan") != std::string::npos) {
      EXPECT_TRUE(r.out.find("not a number") != std::string::npos || r.out.find("NaN") != std::string::npos)
          << command << "\n" << r.out;
    }
  }
  // -1 where a count or a position starts at 0 (CLI11 printed its bound as 300 digits).
  for (const std::string& command : std::vector<std::string>{"trace '" + run + "' --answer-position -1",
                                                             "generate '" + run + "' --seed -1",
                                                             "task sample parity --first -1"}) {
    const Result r = shell(hsm() + " " + command);
    EXPECT_EQ(r.exit_code, 1) << command << "\n" << r.out;
    EXPECT_TRUE(std::regex_search(r.out, std::regex("-1 is out of range; use 0 "))) << command << "\n" << r.out;
    EXPECT_LT(longest_number(r.out), 30u) << command << "\n" << r.out;
  }
  const size_t checked = commands.size();
  EXPECT_GT(checked, 50u) << "the help texts no longer list the numeric options this test reads";
}

// --threads beyond the machine's cores is used as its cores, with a note naming both (issue 65:
// 1024 threads on two cores took a minute for four tokens).
TEST_F(HostileWords, ThreadsBeyondTheCoresAreCappedWithANote) {
  const Result r = shell(hsm() + " generate '" + dir_ + "/base' --prompt Once --max-tokens 4 --seed 1 --threads 100000");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("note: --threads 100000 is more than this machine's [0-9]+ cores?; "
                                                  "using [0-9]+")))
      << r.out;
  // `hsm train --threads` is a setting saved with the run (0 to 1024): a count above the cores is
  // kept in config.json, and the run uses the cores, saying so in its log.
  const std::string common_many = std::regex_replace(common(), std::regex("--threads 1"), "--threads 1000");
  const Result t = shell(hsm() + " train --config '" + dir_ + "/tiny.json' --out '" + dir_ + "/threads-run'" +
                         common_many + " --steps 2 --batch 8 --eval-batches 1");
  EXPECT_EQ(t.exit_code, 0) << t.out;
  EXPECT_TRUE(std::regex_search(t.out, std::regex("note: --threads 1000 is more than this machine's [0-9]+ cores?; "
                                                  "using [0-9]+")))
      << t.out;
}

// A seed never wraps round to 0 (random): -1 and 2^64 - 1 are refused, and the largest seed's
// --samples go on upwards. On the old code -1 was taken as 2^64 - 1 and its second sample's seed
// was 0.
TEST_F(HostileWords, GenerateSeedsNeverWrapToRandom) {
  const std::string run = dir_ + "/base";
  for (const std::string seed : {"-1", "18446744073709551615"}) {
    const Result r = shell(hsm() + " generate '" + run + "' --prompt Once --max-tokens 2 --samples 2 --seed " + seed);
    EXPECT_EQ(r.exit_code, 1) << seed << "\n" << r.out;
    EXPECT_TRUE(has(r, "--seed: ")) << r.out;
    EXPECT_TRUE(has(r, "use 0 (random) to 9223372036854775807")) << r.out;
  }
  const Result r = shell("{ " + hsm() + " generate '" + run +
                         "' --prompt Once --max-tokens 2 --samples 2 --json --seed 9223372036854775807 2>/dev/null; }");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["samples"][0]["seed"].get<uint64_t>(), 9223372036854775807ull);
  EXPECT_EQ(j["samples"][1]["seed"].get<uint64_t>(), 9223372036854775808ull);
}

// `hsm generate` on a task run prints its refusal alone (the old code printed the prompt, "Once",
// on stdout before it); `hsm task sample` refuses a setting given twice (it kept the last).
TEST_F(HostileWords, ARefusalIsTheOnlyOutput) {
  const std::string run = task_run("task-run-words");
  const Result r = shell("{ " + hsm() + " generate '" + run + "' --prompt Once 2>/dev/null; }");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(r.out, "") << "stdout held more than the refusal on stderr";
  const Result twice = shell(hsm() + " task sample parity:length=16,length=8");
  EXPECT_EQ(twice.exit_code, 1) << twice.out;
  EXPECT_TRUE(has(twice, "length is given twice (length=16 and length=8); give it once")) << twice.out;
}

// A prompt longer than the model's context: `hsm trace` refuses it naming the limit (the old code
// cut both prompts to their first 32 tokens and traced that pair, exit 0); an answer token beyond
// the vocabulary is refused before it is narrowed (4294967301 traced token 5); `hsm diagnose` and
// `hsm probe`, which look at a prompt's first tokens, say so.
TEST_F(HostileWords, ALongPromptIsRefusedOrNotedNeverCutUnsaid) {
  const std::string run = dir_ + "/base";
  std::string clean, corrupt;
  for (int i = 0; i < 8; ++i) clean += "Once upon a time, Lily saw a ball. ";
  corrupt = clean;
  corrupt.replace(corrupt.rfind("ball"), 4, "cake");
  Result r = shell(hsm() + " trace '" + run + "' --prompt '" + clean + "' --corrupt '" + corrupt + "'");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("the prompt is [0-9]+ tokens; the model reads at most 32 \\(its "
                                                  "context\\)")))
      << r.out;
  r = shell(hsm() + " trace '" + run + "' --routes --prompt '" + clean + "'");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(has(r, "the model reads at most 32")) << r.out;
  r = shell(hsm() + " trace '" + run + "' --prompt 'Once upon a time' --corrupt 'Once upon a cake' --answer-token "
                    "4294967301");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(has(r, "--answer-token 4294967301 is outside the model's vocabulary; use 0 to 299")) << r.out;
  for (const std::string command : {"diagnose", "probe"}) {
    r = shell("{ " + hsm() + " " + command + " '" + run + "' --prompt '" + clean + "' --json >/dev/null; }");
    EXPECT_EQ(r.exit_code, 0) << command << "\n" << r.out;
    EXPECT_TRUE(std::regex_search(r.out, std::regex("note: the prompt is [0-9]+ tokens; only its first 32 were used "
                                                    "\\(the model's context of 32 tokens\\)")))
        << command << "\n" << r.out;
  }
}

}  // namespace
