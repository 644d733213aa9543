// A stranger's run folder, a full disk, a signal (issue 34): the fourteen ways in a hostile
// tester found, in nine groups, each run against the real `hsm` on a tiny model. Every test
// here failed on the code before the fix (docs/checkpoint-format.md says what each now does).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tiny_run.h"

namespace fs = std::filesystem;

namespace {

class Hostile : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = (fs::temp_directory_path() / ("hsm-hostile-" + std::to_string(::getpid()))).string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    write_tiny_run_inputs(dir_, 5, 0.0);
    // The run every test copies: 12 steps, checkpoints at 8 and 12.
    const Result r = shell(train_command(dir_ + "/base", 12));
    ASSERT_EQ(r.exit_code, 0) << r.out;
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  static std::string hsm() { return std::string("env HSM_RESOURCES='") + HSM_RESOURCES_PATH + "' '" + HSM_CLI_PATH + "'"; }
  static std::string common(const std::string& cache = "cache") {
    return " --data '" + dir_ + "/stories.txt' --cache-dir '" + dir_ + "/" + cache + "' --threads 1";
  }
  static std::string train_command(const std::string& out, int steps, const std::string& cache = "cache",
                                   const std::string& every = " --checkpoint-every 4 --eval-every 6") {
    return hsm() + " train --config '" + dir_ + "/tiny.json' --out '" + out + "'" + common(cache) + " --steps " +
           std::to_string(steps) + " --batch 8" + every + " --eval-batches 1 --log-every 2 --seed 3";
  }
  static std::string resume_command(const std::string& run, int steps) {
    return hsm() + " train --resume --out '" + run + "'" + common() + " --steps " + std::to_string(steps);
  }
  // A copy of the base run, to damage.
  static std::string copy_of_base(const std::string& name) {
    const std::string run = dir_ + "/" + name;
    fs::remove_all(run);
    fs::copy(dir_ + "/base", run, fs::copy_options::recursive);
    return run;
  }
  static nlohmann::json json_file(const std::string& path) { return nlohmann::json::parse(read_file(path), nullptr, false); }
  // A safetensors file's header (8-byte length, then JSON), or null.
  static nlohmann::json safetensors_header(const std::string& path) {
    const std::string bytes = read_file(path);
    if (bytes.size() < 8) return nullptr;
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    if (n > bytes.size() - 8) return nullptr;
    return nlohmann::json::parse(bytes.substr(8, n), nullptr, false);
  }
  static bool strace_works() { return shell("strace -o /dev/null true").exit_code == 0; }

  static std::string dir_;
};

std::string Hostile::dir_;

// The exit status of an option's value out of its range, refused by the parser before the
// command runs: 1, as every other refusal (engine/cli/main.cpp). A crash is not (shell() gives
// -1 for a signal).
constexpr int kValueOutOfRange = 1;

// 1. A .lock, checkpoints/ or metrics.jsonl that is a symbolic link out of the folder: resume
// refuses the folder and nothing outside it changes.
TEST_F(Hostile, LinksOutOfTheRunFolderAreNeverFollowed) {
  const std::string victim = dir_ + "/victim.txt";
  std::ofstream(victim) << "keep\n";
  const std::string lock_run = copy_of_base("link-lock");
  fs::remove(lock_run + "/.lock");
  fs::create_symlink(victim, lock_run + "/.lock");
  Result r = shell(resume_command(lock_run, 16));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("symbolic link"), std::string::npos) << r.out;
  EXPECT_EQ(read_file(victim), "keep\n") << "the lock's link target was written";

  const std::string outside = dir_ + "/outside-checkpoints";
  const std::string ckpt_run = copy_of_base("link-checkpoints");
  fs::rename(ckpt_run + "/checkpoints", outside);
  fs::create_directories(outside + "/step-000000000001");
  std::ofstream(outside + "/precious.tmp") << "keep\n";
  fs::create_directory_symlink(outside, ckpt_run + "/checkpoints");
  r = shell(resume_command(ckpt_run, 16));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("symbolic link"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(outside + "/precious.tmp")) << "resume removed a file outside the folder";
  EXPECT_TRUE(fs::exists(outside + "/step-000000000001")) << "resume pruned a folder outside the run";

  const std::string metrics_victim = dir_ + "/metrics-victim.txt";
  std::ofstream(metrics_victim) << "keep\n";
  const std::string metrics_run = copy_of_base("link-metrics");
  fs::remove(metrics_run + "/metrics.jsonl");
  fs::create_symlink(metrics_victim, metrics_run + "/metrics.jsonl");
  r = shell(resume_command(metrics_run, 16));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("metrics.jsonl' is a symbolic link"), std::string::npos) << r.out;
  EXPECT_EQ(read_file(metrics_victim), "keep\n") << "metrics were written through the link";
}

// 2. Sizes are checked against the files before anything is allocated: a config claiming a
// model of 2.7e9 parameters beside tiny weights, and a tokenizer.model of 2 GiB.
TEST_F(Hostile, SizesAreCheckedBeforeAnythingIsAllocated) {
  const std::string run = copy_of_base("huge-config");
  nlohmann::json config = json_file(run + "/config.json");
  config["model"]["d_model"] = 16384;
  config["model"]["context"] = 65536;
  std::ofstream(run + "/config.json") << config.dump(2);
  // Under a 6 GB address-space limit building the claimed model fails; the check comes first.
  const auto t0 = std::chrono::steady_clock::now();
  Result r = shell("ulimit -v 6000000; timeout 120 " + hsm() + " eval '" + run + "' --max-batches 1" + common());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("belong to different models"), std::string::npos) << r.out;
  EXPECT_LT(seconds, 60) << "the model of the config's size was built first";

  const std::string tok_run = copy_of_base("huge-tokenizer");
  fs::resize_file(tok_run + "/tokenizer.model", uintmax_t{1} << 31);  // sparse: no disk used
  r = shell("ulimit -v 6000000; timeout 120 " + hsm() + " eval '" + tok_run + "' --max-batches 1" + common());
  EXPECT_EQ(r.exit_code, 1) << r.out;  // not SIGABRT in protobuf
  EXPECT_NE(r.out.find("larger than any tokenizer"), std::string::npos) << r.out;
}

// 3. Resume with a damaged newest checkpoint says so, sets it aside with its weights, and a
// stray checkpoint folder name is named in the error.
TEST_F(Hostile, ResumeSaysWhyItPassedOverACheckpointAndKeepsItsWeights) {
  const std::string step12 = "/checkpoints/step-000000000012";
  const std::string aside = "/checkpoints/damaged-step-000000000012";
  {  // optimizer missing: its weights stay, in the damaged folder
    const std::string run = copy_of_base("no-optimizer");
    const std::string weights = read_file(run + step12 + "/model.safetensors");
    fs::remove(run + step12 + "/optimizer.safetensors");
    const Result r = shell(resume_command(run, 12));
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("checkpoint step 12 passed over: optimizer.safetensors is missing"), std::string::npos) << r.out;
    EXPECT_TRUE(read_file(run + aside + "/model.safetensors") == weights) << "the step-12 weights were lost";
  }
  {  // model missing: the run's top-level copy of the step-12 weights is kept; later resumes work
    const std::string run = copy_of_base("no-model");
    const std::string weights = read_file(run + "/model.safetensors");
    fs::remove(run + step12 + "/model.safetensors");
    Result r = shell(resume_command(run, 12));
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("model.safetensors is missing"), std::string::npos) << r.out;
    EXPECT_TRUE(read_file(run + aside + "/model.safetensors") == weights) << "the only copy of step 12 was overwritten";
    r = shell(resume_command(run, 16));
    EXPECT_EQ(r.exit_code, 0) << "a later resume\n" << r.out;
  }
  {  // a stray folder: named, not "stoll"
    const std::string run = copy_of_base("stray");
    fs::create_directories(run + "/checkpoints/step-99999999999999999999");
    const Result r = shell(resume_command(run, 16));
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_NE(r.out.find("step-99999999999999999999"), std::string::npos) << r.out;
  }
}

// 4. `hsm export` refuses a source that does not load, and replaces an earlier export whole:
// killed at any of its file operations, the export folder is the old one or the new one.
TEST_F(Hostile, ExportIsOneUnitAndRefusesWhatDoesNotLoad) {
  const std::string bad = copy_of_base("no-layers");
  nlohmann::json config = json_file(bad + "/config.json");
  config["model"]["layers"] = nlohmann::json::array();
  std::ofstream(bad + "/config.json") << config.dump(2);
  Result r = shell(hsm() + " export '" + bad + "' --out '" + dir_ + "/bad-export'");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("layers: a model needs at least one layer"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir_ + "/bad-export")) << "an export of a folder that does not load was written";

  if (!strace_works()) GTEST_SKIP() << "strace cannot trace here";
  const std::string base = dir_ + "/base", out = dir_ + "/export";
  const std::string tokenizer = read_file(base + "/tokenizer.model"), metrics = read_file(base + "/metrics.jsonl");
  const std::string exporting = hsm() + " export '" + base + "' --out '" + out + "' --dtype f32";
  const std::string traced_calls = "write,rename,renameat2,unlink,unlinkat,sendfile,copy_file_range";
  const std::string log = dir_ + "/export-trace.log";
  ASSERT_EQ(shell(hsm() + " export '" + base + "' --out '" + out + "' --dtype f16").exit_code, 0);
  ASSERT_EQ(shell("strace -o '" + log + "' -e trace=" + traced_calls + " " + exporting).exit_code, 0);
  std::map<std::string, int> count;
  std::vector<std::pair<std::string, int>> points, writes;
  const std::regex call(R"(^(\w+)\()");
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, call)) (m[1] == "write" ? writes : points).emplace_back(m[1], ++count[m[1]]);
  }
  // Every rename, the first removals, and four writes spread over the rest (the weights' are
  // alike): each kill point costs two exports.
  std::vector<std::pair<std::string, int>> chosen;
  int removals = 0;
  for (const auto& p : points)
    if (p.first.rfind("rename", 0) == 0 || (p.first.rfind("unlink", 0) == 0 && ++removals <= 3)) chosen.push_back(p);
  for (size_t i = 0; i < 4 && !writes.empty(); ++i) chosen.push_back(writes[i * (writes.size() - 1) / 3]);
  points = chosen;
  ASSERT_GE(points.size(), 5u) << read_file(log);
  for (const auto& [syscall, n] : points) {
    ASSERT_EQ(shell(hsm() + " export '" + base + "' --out '" + out + "' --dtype f16").exit_code, 0);
    r = shell("strace -o /dev/null -e trace=" + traced_calls + " -e inject=" + syscall +
              ":signal=KILL:when=" + std::to_string(n) + " " + exporting);
    const std::string what = "killed at " + syscall + " #" + std::to_string(n);
    const nlohmann::json c = json_file(out + "/config.json");
    ASSERT_TRUE(c.is_object()) << what << ": no config.json";
    const std::string dtype = c["export"]["dtype"];
    const nlohmann::json header = safetensors_header(out + "/model.safetensors");
    ASSERT_TRUE(header.is_object()) << what << ": model.safetensors unreadable";
    for (const auto& [name, t] : header.items())
      if (name != "__metadata__" && t["dtype"] != "I64") {
        ASSERT_EQ(t["dtype"], dtype) << what << ": " << name << " beside a config of " << dtype;
      }
    EXPECT_TRUE(read_file(out + "/tokenizer.model") == tokenizer) << what << ": tokenizer.model damaged";
    EXPECT_TRUE(read_file(out + "/metrics.jsonl") == metrics) << what << ": metrics.jsonl damaged";
  }
}

// 5. A full disk for a moment (three writes of metrics.jsonl fail) loses no record: no torn
// line, every record of the run is in the file, and the log says what happened.
TEST_F(Hostile, AFullDiskForAMomentLosesNoRecord) {
  if (!strace_works()) GTEST_SKIP() << "strace cannot trace here";
  const std::string run = dir_ + "/disk-full";
  const std::string metrics = run + "/metrics.jsonl";
  const Result r = shell("strace -o /dev/null -P '" + metrics + "' -e trace=write,pwrite64,writev -e inject=write,pwrite64,"
                         "writev:error=ENOSPC:when=3..5 " + train_command(run, 24));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("cannot write metrics.jsonl"), std::string::npos) << "the failure was silent\n" << r.out;
  std::vector<int64_t> train_steps, eval_steps;
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_TRUE(j.is_object()) << "a torn line: " << line;
    (j["kind"] == "train" ? train_steps : eval_steps).push_back(j["step"].get<int64_t>());
  }
  std::vector<int64_t> expected_train, expected_eval = {6, 12, 18, 24};
  for (int64_t s = 2; s <= 24; s += 2) expected_train.push_back(s);
  EXPECT_EQ(train_steps, expected_train);
  EXPECT_EQ(eval_steps, expected_eval);
}

// 6. SIGTERM and SIGHUP stop `hsm train` as Ctrl-C does: at a step, with a checkpoint of it,
// exit status 130.
TEST_F(Hostile, SigtermAndSighupStopAtAStepWithACheckpoint) {
  for (const int sig : {SIGTERM, SIGHUP}) {
    const std::string run = dir_ + "/signal-" + std::to_string(sig);
    const std::string rc = run + ".rc", pid = run + ".pid";
    shell("(" + train_command(run, 100000, "cache", " --checkpoint-every 0 --eval-every 0") + " > '" + run +
          ".log' 2>&1 & echo $! > '" +
          pid + "'; wait $!; echo $? > '" + rc + "') > /dev/null 2>&1 &");
    // Until it trains (a record of step 2 in its curve).
    for (int i = 0; i < 600 && read_file(run + "/metrics.jsonl").find("\"train\"") == std::string::npos; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_NE(read_file(run + "/metrics.jsonl").find("\"train\""), std::string::npos) << read_file(run + ".log");
    ASSERT_EQ(::kill(std::stoi(read_file(pid)), sig), 0);
    for (int i = 0; i < 600 && read_file(rc).empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const std::string out = read_file(run + ".log");
    EXPECT_EQ(std::atoi(read_file(rc).c_str()), 130) << strsignal(sig) << "\n" << out;
    EXPECT_NE(out.find("stopped at step"), std::string::npos) << strsignal(sig) << "\n" << out;
    const nlohmann::json c = json_file(run + "/config.json");
    ASSERT_TRUE(c.is_object()) << out;
    EXPECT_GT(c["state"]["step"].get<int64_t>(), 0) << "no stop checkpoint after " << strsignal(sig);
  }
}

// The `hsm` processes (this build's binary) whose command line names `path`: a launcher and
// its ranks (not the shells around them).
int hsm_processes_naming(const std::string& path) {
  std::error_code ec;
  const fs::path hsm_exe = fs::canonical(HSM_CLI_PATH, ec);
  int n = 0;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    if (fs::read_symlink(entry.path() / "exe", ec) != hsm_exe) continue;
    std::string cmdline = read_file((entry.path() / "cmdline").string());
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(path) != std::string::npos) ++n;
  }
  return n;
}

// A stop signal (SIGINT, SIGTERM) sent to the `--nproc` launcher alone (not to its process
// group) reaches both ranks, which were training: rank 0 writes the stop checkpoint (at the
// step it stopped, not step 0's), every rank exits, and the launcher exits 130.
TEST_F(Hostile, TheLauncherPassesAStopSignalOnToItsRanks) {
  if (!HSM_TEST_DATA_PARALLEL)
    GTEST_SKIP() << "no data-parallel training in this build (a LibTorch without c10d's Gloo, or "
                    "HSM_DATA_PARALLEL=OFF)";
  for (const int sig : {SIGINT, SIGTERM}) {
    const std::string run = dir_ + "/launcher-signal-" + std::to_string(sig);
    const std::string rc = run + ".rc", pid = run + ".pid";
    shell("(" + hsm() + " train --nproc 2 --config '" + dir_ + "/tiny.json' --out '" + run + "'" + common() +
          " --steps 100000 --batch 8 --eval-every 0 --checkpoint-every 0 --log-every 2 > '" + run +
          ".log' 2>&1 & echo $! > '" + pid + "'; wait $!; echo $? > '" + rc + "') > /dev/null 2>&1 &");
    for (int i = 0; i < 900 && read_file(run + "/metrics.jsonl").find("\"train\"") == std::string::npos; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const int launcher = std::stoi(read_file(pid));
    // Before the signal: it trains, and the launcher and its two ranks are running.
    const bool training = read_file(run + "/metrics.jsonl").find("\"train\"") != std::string::npos;
    const int before = hsm_processes_naming(run);
    if (!training || before != 3) ::kill(launcher, SIGKILL);
    ASSERT_TRUE(training) << read_file(run + ".log");
    ASSERT_EQ(before, 3) << "the launcher and 2 ranks";
    ASSERT_EQ(::kill(launcher, sig), 0);
    for (int i = 0; i < 600 && read_file(rc).empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (read_file(rc).empty()) ::kill(launcher, SIGKILL);  // the ranks follow it (PR_SET_PDEATHSIG)
    const std::string out = read_file(run + ".log");
    EXPECT_EQ(std::atoi(read_file(rc).c_str()), 130) << strsignal(sig) << "\n" << out;
    EXPECT_NE(out.find("stopped at step"), std::string::npos) << strsignal(sig) << "\n" << out;
    for (int i = 0; i < 100 && hsm_processes_naming(run) > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(hsm_processes_naming(run), 0) << "a rank outlived the launcher after " << strsignal(sig);
    // The stop checkpoint: at a step past every record of the curve (step 0's is the only other).
    const nlohmann::json c = json_file(run + "/config.json");
    ASSERT_TRUE(c.is_object()) << out;
    int64_t last_record = 0;
    std::ifstream in(run + "/metrics.jsonl");
    for (std::string line; std::getline(in, line);) {
      const auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object()) last_record = std::max(last_record, j.value("step", int64_t{0}));
    }
    EXPECT_GT(last_record, 0);
    EXPECT_GE(c["state"]["step"].get<int64_t>(), last_record) << "no stop checkpoint after " << strsignal(sig) << "\n" << out;
  }
}

// 7. No silent zeros or NaNs: numeric options have ranges, an evaluation of nothing is an
// error, and a loss or next-token scores that are not finite are reported as such.
TEST_F(Hostile, NoSilentZerosOrNaNs) {
  const std::string eval = hsm() + " eval '" + dir_ + "/base'" + common();
  for (const std::string& options : {" --batch 9223372036854775807", " --batch 99999999999999999999",
                                     " --max-batches -1", " --max-batches 4611686018427387904"}) {
    const Result r = shell(eval + options);
    EXPECT_EQ(r.exit_code, kValueOutOfRange) << options << "\n" << r.out;
    // The range in words (engine/cli/number_options.h), the value out of it or past what the option holds.
    EXPECT_TRUE(r.out.find("is out of range; use ") != std::string::npos ||
                r.out.find("is beyond what this option can hold; use ") != std::string::npos)
        << options << "\n" << r.out;
  }
  Result r = shell(eval + " --max-batches 1 --set-ab 0:-1e38:1");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("not finite"), std::string::npos) << r.out;

  // Finite but huge weights (an embedding of 3e38, the final norm's bias 1) pass the load
  // check and overflow after it, in LibTorch and in the fast decoder alike.
  const std::string run = copy_of_base("huge-weights");
  std::string bytes = read_file(run + "/model.safetensors");
  const nlohmann::json header = safetensors_header(run + "/model.safetensors");
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  for (const auto& [name, value] : {std::pair{"tok_emb.weight", 3e38f}, {"ln_f.bias", 1.0f}}) {
    const auto& t = header[name];
    ASSERT_EQ(t["dtype"], "F32") << name;
    for (uint64_t at = 8 + header_len + t["data_offsets"][0].get<uint64_t>();
         at < 8 + header_len + t["data_offsets"][1].get<uint64_t>(); at += 4)
      std::memcpy(&bytes[at], &value, 4);
  }
  fs::remove(run + "/model.safetensors");  // a hard link to the checkpoint's
  std::ofstream(run + "/model.safetensors", std::ios::binary) << bytes;
  r = shell(hsm() + " eval '" + run + "' --max-batches 1" + common());
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("not finite"), std::string::npos) << r.out;
  r = shell(hsm() + " generate '" + run + "' --prompt 'Once upon' --max-tokens 4 --seed 1");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("not finite"), std::string::npos) << r.out;
}

// 8. Two trainers fill one tokenizer cache at once: each writes its own temporary.
TEST_F(Hostile, TwoTrainersFillTheTokenizerCacheAtOnce) {
  // The other writer's temporary in flight (it once had the one fixed name <cache>.tmp).
  std::string cached;
  for (const auto& e : fs::directory_iterator(dir_ + "/cache"))
    if (e.path().filename().string().rfind("tokenizer-", 0) == 0 && e.path().extension() == ".model")
      cached = e.path().filename().string();
  ASSERT_FALSE(cached.empty());
  fs::create_directories(dir_ + "/cache-busy/" + cached + ".tmp");
  Result r = shell(train_command(dir_ + "/busy-cache", 4, "cache-busy"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  for (int pair = 0; pair < 3; ++pair) {
    const std::string cache = "cache-pair-" + std::to_string(pair), a = dir_ + "/pair-a-" + std::to_string(pair),
                      b = dir_ + "/pair-b-" + std::to_string(pair);
    r = shell("(" + train_command(a, 2, cache) + " > '" + a + ".log' 2>&1; echo $? > '" + a + ".rc') & " +
              train_command(b, 2, cache) + " > '" + b + ".log' 2>&1; echo $? > '" + b + ".rc'; wait");
    EXPECT_EQ(read_file(a + ".rc"), "0\n") << read_file(a + ".log");
    EXPECT_EQ(read_file(b + ".rc"), "0\n") << read_file(b + ".log");
  }
}

// 9. Out of memory is an error, never a spin: under address-space limits from too low to
// enough, `hsm eval` ends each time (OpenBLAS used to retry a failed buffer map forever).
TEST_F(Hostile, ResourceLimitsEndInAnErrorNeverASpin) {
  int errors = 0;
  for (int mb = 500; mb <= 2500; mb += 100) {
    const Result r = shell("ulimit -v " + std::to_string(mb * 1024) + "; timeout 60 " + hsm() + " eval '" + dir_ +
                           "/base' --max-batches 1" + common().replace(common().find("--threads 1"), 11, "--threads 2"));
    ASSERT_NE(r.exit_code, 124) << "hung under ulimit -v " << mb << " MB\n" << r.out;
    // 127: the loader cannot map a library; SIGABRT with bad_alloc: LibTorch's static
    // initialisers, before main, cannot allocate. Both end, with their cause.
    const bool aborted_loading = r.signal == SIGABRT && r.out.find("bad_alloc") != std::string::npos;
    ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1 || r.exit_code == 127 || aborted_loading)
        << "under ulimit -v " << mb << " MB: exit " << r.exit_code << " signal " << r.signal << "\n" << r.out;
    // An error names the limit and its fix (from before main too: hsm/cpu_threads.h,
    // start_before_libraries, where OpenBLAS 0.3.29 would otherwise hang as it loads).
    if (r.exit_code == 1) EXPECT_NE(r.out.find("ulimit -v"), std::string::npos) << mb << " MB\n" << r.out;
    errors += r.exit_code != 0;
  }
  EXPECT_GT(errors, 0) << "no limit was low enough to matter";
  // A thread count OpenBLAS's variable gives that cannot be read is the user's: kept, not added
  // to again and again (each addition executes the program once more).
  const Result odd = shell("ulimit -v " + std::to_string(2500 * 1024) + "; OPENBLAS_NUM_THREADS=two timeout 60 " +
                           hsm() + " --version");
  EXPECT_EQ(odd.exit_code, 0) << odd.out;
}

// An unreadable corpus sub-folder is refused by name. As root every folder is readable, so the
// tokenizer runs as nobody; that needs nobody to reach the binary, which a clone in root's
// home folder (mode 700, a newcomer's usual place) does not allow: then it skips, saying so.
TEST_F(Hostile, AnUnreadableCorpusFolderIsRefusedByName) {
  const std::string as_user = ::geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
  if (!as_user.empty() && shell(as_user + "true").exit_code != 0) GTEST_SKIP() << "cannot run as another user here";
  if (!as_user.empty() && shell(as_user + "test -x '" + std::string(HSM_CLI_PATH) + "'").exit_code != 0)
    GTEST_SKIP() << "user nobody cannot run " << HSM_CLI_PATH
                 << ": a folder above it is closed to other users (a clone in root's home folder, mode 700?)";
  const std::string corpus = dir_ + "/unreadable-corpus";
  fs::create_directories(corpus + "/locked");
  fs::copy_file(dir_ + "/stories.txt", corpus + "/a.txt");
  fs::copy_file(dir_ + "/stories.txt", corpus + "/locked/b.txt");
  fs::permissions(corpus + "/locked", fs::perms::none);
  fs::permissions(dir_, fs::perms::all);  // reachable by the unprivileged user below
  const std::string out = dir_ + "/writable";
  fs::create_directories(out);
  fs::permissions(out, fs::perms::all);
  const Result r = shell(as_user + hsm() + " tokenizer train --data '" + corpus + "' --out '" + out +
                         "/t.model' --vocab 300");
  fs::permissions(corpus + "/locked", fs::perms::owner_all);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("locked"), std::string::npos) << r.out;
}

}  // namespace
