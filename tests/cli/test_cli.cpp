// The `hsm` command-line tool, run as a user would: exit codes, JSON that parses, errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

namespace {

struct Result {
  int status;
  std::string out;  // stdout and stderr together
};

// `env`: what goes before the command ("env -u NAME NAME=value", as for env(1)).
Result run(const std::string& args, const std::string& env = "") {
  const std::string cmd =
      env + " HSM_RESOURCES='" + HSM_RESOURCES_PATH + "' '" + HSM_CLI_PATH + "' " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  Result r{-1, ""};
  if (!pipe) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  const int st = pclose(pipe);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

nlohmann::json run_json(const std::string& args) {
  const std::string cmd = std::string("HSM_RESOURCES='") + HSM_RESOURCES_PATH + "' '" + HSM_CLI_PATH + "' " + args;
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  EXPECT_EQ(pclose(pipe), 0) << args;
  return nlohmann::json::parse(out);  // throws (fails the test) if not JSON
}

}  // namespace

TEST(Cli, PresetsJsonListsEveryPresetWithCounts) {
  const auto j = run_json("presets --json");
  ASSERT_TRUE(j.is_array());
  ASSERT_GE(j.size(), 12u);
  bool saw_gpt = false;
  for (const auto& p : j) {
    if (p["name"].get<std::string>().rfind("ex_", 0) == 0) continue;  // EX Table 1: 18 layers, checked below
    if (p["name"] == "starter") {  // the studio's small model, not the paper's (test_starter.cpp)
      EXPECT_EQ(p["params"].get<int64_t>(), 1198222);
      continue;
    }
    EXPECT_NEAR(p["params"].get<double>(), 5.1e6, 0.03 * 5.1e6) << p["name"];
    EXPECT_EQ(p["layers"].size(), 7u);
    if (p["name"] == "gpt") {
      saw_gpt = true;
      EXPECT_EQ(p["params"].get<int64_t>(), 5003008);
      EXPECT_EQ(p["layers"][0]["mixer"], "attn");
    }
  }
  EXPECT_TRUE(saw_gpt);
}

TEST(Cli, ExtractorPresetsListParamsCoverageAndCost) {
  const auto j = run_json("presets --json");
  int seen = 0;
  for (const auto& p : j) {
    const std::string name = p["name"];
    if (name.rfind("ex_", 0) != 0) continue;
    ++seen;
    EXPECT_EQ(p["layers"].size(), 18u) << name;
    EXPECT_EQ(p["layers"][0]["coverage"], 128) << name;  // every earlier position from layer 0
    EXPECT_GT(p["macs_per_token"].get<int64_t>(), 0) << name;
    if (name == "ex_she") EXPECT_EQ(p["params"].get<int64_t>(), 41375232);
    if (name == "ex_attn32") EXPECT_EQ(p["layers"][0]["heads"], 32);
  }
  EXPECT_EQ(seen, 6);
  const auto r = run("inspect ex_me");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("MACs per token at context 128"), std::string::npos);
}

TEST(Cli, PresetsTextMentionsEveryPreset) {
  const auto r = run("presets");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("hybrid_mh_0_6"), std::string::npos);
  EXPECT_NE(r.out.find("total parameters"), std::string::npos);
}

TEST(Cli, InspectHsmAbCoverageDoubles) {
  const auto j = run_json("inspect hsm_ab --json");
  EXPECT_EQ(j["receptive_field"]["coverage"], (std::vector<int64_t>{2, 4, 8, 16, 32, 64, 128}));
  EXPECT_EQ(j["layers"][6]["shifts"], std::vector<int64_t>{64});
  EXPECT_EQ(j["params"]["total"].get<int64_t>(), j["config"].is_object() ? j["params"]["total"].get<int64_t>() : -1);
}

TEST(Cli, InspectTargetParamsMatchesFfn) {
  const auto j = run_json("inspect hsm_ab --target-params 8000000 --json");
  const int64_t ffn = j["ffn_match"]["ffn"];
  EXPECT_EQ(ffn % 64, 0);
  EXPECT_LT(std::abs(j["ffn_match"]["relative_error"].get<double>()), 0.01);
  EXPECT_EQ(j["layers"][0]["ffn"].get<int64_t>(), ffn);
  EXPECT_EQ(j["params"]["total"], j["ffn_match"]["params"]);
}

TEST(Cli, InspectConfigFile) {
  const std::string path = ::testing::TempDir() + "/hsm_cli_tiny_" + std::to_string(::getpid()) + ".json";
  std::ofstream(path) << R"({"name": "tiny", "vocab_size": 100, "d_model": 32, "context": 16,
                           "layers": [{"mixer": "hsm_ab"}, {"mixer": "attn", "heads": 4}]})";
  const auto j = run_json("inspect " + path + " --json");
  EXPECT_EQ(j["name"], "tiny");
  EXPECT_EQ(j["receptive_field"]["coverage"], (std::vector<int64_t>{2, 16}));
}

TEST(Cli, BadInputFailsWithOneLineReason) {
  auto r = run("inspect no_such_preset");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("unknown preset 'no_such_preset'"), std::string::npos) << r.out;

  const std::string bad = ::testing::TempDir() + "/hsm_cli_bad_" + std::to_string(::getpid()) + ".json";
  std::ofstream(bad) << R"({"layers": [{"mixer": "attn", "heads": 3}]})";
  r = run("inspect " + bad);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("layers[0].heads"), std::string::npos) << r.out;

  r = run("inspect /nonexistent/config.json");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("does not exist"), std::string::npos) << r.out;

  r = run("inspect hsm_ab --target-params -5");
  EXPECT_NE(r.status, 0);

  r = run("frobnicate");
  EXPECT_NE(r.status, 0);

  r = run("");
  EXPECT_NE(r.status, 0);
}

// libgomp prints the settings it read under OMP_DISPLAY_ENV=verbose, from its initialiser: once per
// start of the program. The parallel commands run on the short spin (GOMP_SPINCOUNT 10000,
// hsm/cpu_threads.h), set before any library's initialiser, so libgomp (and LibTorch with it)
// starts once and reads it; a user's setting is kept; the other commands keep libgomp's default.
TEST(Cli, ParallelCommandsGetTheShortOpenMpSpinInOneStart) {
  const auto starts = [](const std::string& out) {
    int n = 0;
    for (size_t at = out.find("OPENMP DISPLAY ENVIRONMENT BEGIN"); at != std::string::npos;
         at = out.find("OPENMP DISPLAY ENVIRONMENT BEGIN", at + 1))
      ++n;
    return n;
  };
  const std::string unset = "env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY OMP_DISPLAY_ENV=verbose";
  for (const char* command : {"train", "eval", "sweep"}) {
    const auto r = run(std::string(command) + " --help", unset);
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(starts(r.out), 1) << command << ": libgomp started more than once\n" << r.out;
    EXPECT_NE(r.out.find("GOMP_SPINCOUNT = '10000'"), std::string::npos) << command << "\n" << r.out;
  }
  auto r = run("eval --help", "env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=5000 OMP_DISPLAY_ENV=verbose");
  EXPECT_EQ(starts(r.out), 1) << r.out;
  EXPECT_NE(r.out.find("GOMP_SPINCOUNT = '5000'"), std::string::npos) << r.out;
  r = run("presets", unset);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(starts(r.out), 1) << r.out;
  EXPECT_EQ(r.out.find("GOMP_SPINCOUNT = '10000'"), std::string::npos) << r.out;
}

// ---- training pipeline from the command line ----------------------------------------------
namespace {

std::string cli_temp_dir() {
  const std::string dir = ::testing::TempDir() + "/hsm_cli_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string write_corpus(const std::string& dir) {
  std::string text;
  for (int s = 0; s < 300; ++s) {
    for (int k = 0; k < 5; ++k) text += "Once upon a time, Lily saw a red ball " + std::to_string(s % 7) + ". ";
    text += "\n<|endoftext|>\n";
  }
  std::ofstream(dir + "/corpus.txt") << text;
  std::ofstream(dir + "/tiny.json") << R"({"name": "tiny", "vocab_size": 300, "d_model": 32, "context": 32,
      "dropout": 0.0, "layers": [{"mixer": "hsm_ab", "ffn": 64}, {"mixer": "attn", "heads": 4, "ffn": 64},
      {"mixer": "hsm_ab", "ffn": 64}]})";
  return dir + "/corpus.txt";
}

}  // namespace

TEST(CliPipeline, TrainEvalGenerateAndRefuseACorruptCheckpoint) {
  const std::string dir = cli_temp_dir();
  const std::string corpus = write_corpus(dir);
  const std::string run_dir = dir + "/run";
  const std::string common = " --cache-dir " + dir + "/cache --threads 1";

  auto tok = run_json("tokenizer train --data " + corpus + " --vocab 300 --out " + dir + "/tok.model --json");
  EXPECT_EQ(tok["vocab_size"], 300);

  auto train = run_json("train --config " + dir + "/tiny.json --data " + corpus + " --out " + run_dir +
                        " --steps 30 --batch 8 --eval-every 10 --json" + common);
  EXPECT_EQ(train["steps"], 30);
  EXPECT_LT(train["val_loss"].get<double>(), std::log(300.0));

  // Resume to 40 steps: the step count continues.
  auto more = run_json("train --resume --out " + run_dir + " --steps 40 --json" + common);
  EXPECT_EQ(more["steps"], 40);

  auto eval = run_json("eval " + run_dir + " --json" + common);
  EXPECT_GT(eval["tokens"].get<int64_t>(), 0);
  EXPECT_GT(eval["accuracy"].get<double>(), 0.0);
  EXPECT_EQ(eval["split"], "val");

  auto gen = run_json("generate " + run_dir + " --prompt 'Once upon' --seed 4 --max-tokens 12 --no-stop --json");
  EXPECT_EQ(gen["tokens"].size(), 12u);
  EXPECT_EQ(gen["seed"], 4);
  // The time to the first token is part of the whole, and the decoder's making part of it.
  EXPECT_GT(gen["first_token_seconds"].get<double>(), 0.0);
  EXPECT_LT(gen["first_token_seconds"].get<double>(), gen["seconds"].get<double>());
  EXPECT_GE(gen["setup_seconds"].get<double>(), 0.0);
  EXPECT_LE(gen["setup_seconds"].get<double>(), gen["first_token_seconds"].get<double>());
  for (const auto& t : gen["tokens"]) {
    EXPECT_GT(t["prob"].get<double>(), 0.0);
    EXPECT_GE(t["top"].size(), 1u);
  }
  auto again = run_json("generate " + run_dir + " --prompt 'Once upon' --seed 4 --max-tokens 12 --no-stop --json --no-cache");
  EXPECT_EQ(again["text"], gen["text"]);

  // Several stories in one process: the i-th from seed + i, each as its own call with that seed.
  auto several = run_json("generate " + run_dir + " --prompt 'Once upon' --seed 3 --max-tokens 12 --no-stop --json --samples 2");
  ASSERT_EQ(several["samples"].size(), 2u) << several.dump();
  EXPECT_EQ(several["samples"][0]["seed"], 3);
  EXPECT_EQ(several["samples"][1]["seed"], 4);
  EXPECT_EQ(several["samples"][1]["text"], gen["text"]);
  // The same tokens; their probabilities to rounding (a token's threads follow the machine's load,
  // and a split product may sum in another order).
  ASSERT_EQ(several["samples"][1]["tokens"].size(), gen["tokens"].size());
  for (size_t i = 0; i < gen["tokens"].size(); ++i) {
    EXPECT_EQ(several["samples"][1]["tokens"][i]["id"], gen["tokens"][i]["id"]) << i;
    EXPECT_NEAR(several["samples"][1]["tokens"][i]["prob"].get<double>(), gen["tokens"][i]["prob"].get<double>(), 1e-5)
        << i;
  }
  EXPECT_GT(several["samples"][1]["first_token_seconds"].get<double>(), 0.0);
  auto three = run("generate " + run_dir + " --prompt 'Once upon' --seed 4 --max-tokens 12 --no-stop --samples 3");
  EXPECT_EQ(three.status, 0);
  EXPECT_EQ(three.out.rfind("Once upon" + gen["text"].get<std::string>(), 0), 0u) << three.out;
  size_t summaries = 0;
  for (size_t at = three.out.find("[12 tokens, "); at != std::string::npos; at = three.out.find("[12 tokens, ", at + 1))
    ++summaries;
  EXPECT_EQ(summaries, 3u) << three.out;
  // Refused as a usage error (exit 1, naming the option), not any non-zero status: a crash gives
  // one too (issue 65).
  const auto none = run("generate " + run_dir + " --samples 0");
  EXPECT_EQ(none.status, 1) << none.out;
  EXPECT_EQ(none.out.rfind("--samples: ", 0), 0u) << none.out;
  EXPECT_EQ(none.out.find("Once upon"), std::string::npos) << none.out;  // nothing generated

  // Streamed text mode prints the prompt and the continuation.
  auto text = run("generate " + run_dir + " --prompt 'Once upon' --seed 4 --max-tokens 12 --no-stop");
  EXPECT_EQ(text.status, 0);
  EXPECT_EQ(text.out.rfind("Once upon" + gen["text"].get<std::string>(), 0), 0u) << text.out;
  EXPECT_NE(text.out.find("[12 tokens, "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(" tokens/s, the first after "), std::string::npos) << text.out;

  // A truncated checkpoint is refused with a reason.
  const std::string weights = run_dir + "/model.safetensors";
  std::filesystem::resize_file(weights, std::filesystem::file_size(weights) - 10);
  auto refused = run("generate " + run_dir + " --prompt x");
  EXPECT_NE(refused.status, 0);
  EXPECT_NE(refused.out.find("truncated"), std::string::npos) << refused.out;
}

TEST(CliPipeline, BadInputsFailWithAReason) {
  const std::string dir = cli_temp_dir() + "_bad";
  std::filesystem::create_directories(dir);
  auto r = run("train --preset hsm_ab --data /nonexistent/corpus.txt --out " + dir + "/r");
  EXPECT_NE(r.status, 0);
  r = run("train --resume --out " + dir);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("config.json"), std::string::npos) << r.out;
  r = run("generate " + dir + " --prompt hi");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("not a run folder"), std::string::npos) << r.out;
  r = run("train --data " + dir + " --out " + dir + "/r2");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("--preset"), std::string::npos) << r.out;
  std::ofstream(dir + "/empty.txt") << "";
  r = run("tokenizer train --data " + dir + "/empty.txt --vocab 300 --out " + dir + "/t.model");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("empty.txt"), std::string::npos) << r.out;
  r = run("generate " + dir + " --top-p 2");
  EXPECT_NE(r.status, 0);
}

TEST(CliPipeline, DiagnoseAndWeights) {
  const std::string dir = cli_temp_dir() + "_diag";
  std::filesystem::create_directories(dir);
  const std::string corpus = write_corpus(dir);
  const std::string run_dir = dir + "/run";
  run_json("train --config " + dir + "/tiny.json --data " + corpus + " --out " + run_dir +
           " --steps 3 --batch 8 --json --threads 1 --cache-dir " + dir + "/cache");

  auto d = run_json("diagnose " + run_dir + " --prompt 'Once upon a time, Lily saw a red ball' --json");
  EXPECT_EQ(d["run"], run_dir);  // a saved diagnosis says what it is of
  EXPECT_EQ(d["prompt"], "Once upon a time, Lily saw a red ball");
  ASSERT_TRUE(d["tokens"].is_array());
  const size_t L = d["tokens"].size();
  ASSERT_GT(L, 1u);
  ASSERT_EQ(d["layers"].size(), 3u);  // tiny.json: hsm_ab, attn, hsm_ab
  const char* kinds[] = {"linear", "attention", "linear"};
  const size_t heads[] = {1, 4, 1};
  for (size_t l = 0; l < 3; ++l) {
    const auto& layer = d["layers"][l];
    EXPECT_EQ(layer["layer"], l);
    EXPECT_EQ(layer["matrix_kind"], kinds[l]);
    EXPECT_TRUE(layer["mixer"].is_string());
    for (const char* group : {"indicators", "normalised"}) {
      for (const char* key : {"entropy", "conc", "headdiv", "sink"}) EXPECT_TRUE(layer[group][key].is_number()) << key;
      EXPECT_EQ(layer[group]["locfoc"].size(), 4u);
    }
    ASSERT_EQ(layer["heads"].size(), heads[l]);
    for (const auto& h : layer["heads"]) {
      EXPECT_TRUE(h["head"].is_number_integer());
      EXPECT_EQ(h["shift"], kinds[l] == std::string("attention") ? -1 : (l == 0 ? 1 : 4));
      ASSERT_EQ(h["matrix"].size(), L);
      for (const auto& row : h["matrix"]) {
        ASSERT_EQ(row.size(), L);
        double sum = 0;
        for (const auto& v : row) sum += v.get<double>();
        EXPECT_NEAR(sum, 1.0, 1e-4);
      }
      EXPECT_EQ(h["indicators"]["locfoc"].size(), 4u);
    }
  }
  auto one = run_json("diagnose " + run_dir + " --prompt 'Once upon' --layer 1 --json");
  ASSERT_EQ(one["layers"].size(), 1u);
  EXPECT_EQ(one["layers"][0]["layer"], 1);

  auto text = run("diagnose " + run_dir + " --prompt 'Once upon a time'");
  EXPECT_EQ(text.status, 0);
  EXPECT_NE(text.out.find("run " + run_dir + ", prompt \"Once upon a time\""), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("entropy"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("attention"), std::string::npos) << text.out;
  auto bad = run("diagnose " + run_dir + " --prompt 'Once' --layer 7");
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.out.find("out of range"), std::string::npos) << bad.out;
  bad = run("diagnose " + run_dir + " --prompt ''");
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.out.find("empty"), std::string::npos) << bad.out;

  auto w = run_json("weights " + run_dir + " --json");
  ASSERT_EQ(w["layers"].size(), 3u);
  EXPECT_EQ(w["layers"][0]["a"].size(), 1u);
  EXPECT_EQ(w["layers"][1]["a"].size(), 0u);
  EXPECT_EQ(w["layers"][2]["shifts"], nlohmann::json::array({4}));
  EXPECT_FALSE(w.contains("offset_weights"));  // not an all-hsm_ab model
  auto wt = run("weights " + run_dir);
  EXPECT_EQ(wt.status, 0);
  EXPECT_NE(wt.out.find("hsm_ab"), std::string::npos) << wt.out;
}

TEST(CliBench, ReportsRatiosForEveryModel) {
  const std::string dir = cli_temp_dir() + "_bench";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/a.json") << R"({"name": "a", "vocab_size": 50, "d_model": 16, "context": 16,
      "layers": [{"mixer": "attn", "heads": 2, "ffn": 32}, {"mixer": "attn", "heads": 2, "ffn": 32}]})";
  std::ofstream(dir + "/b.json") << R"({"name": "b", "vocab_size": 50, "d_model": 16, "context": 16,
      "layers": [{"mixer": "hsm_ab", "ffn": 32}, {"mixer": "hsm_ab", "ffn": 32}]})";
  const auto j = run_json("bench " + dir + "/a.json " + dir + "/b.json --steps 1 --batch 2 --tokens 5 --threads 1 --json");
  ASSERT_EQ(j["models"].size(), 2u);
  EXPECT_EQ(j["baseline"], "a");
  EXPECT_DOUBLE_EQ(j["models"][0]["train_vs_baseline"].get<double>(), 1.0);
  for (const auto& m : j["models"]) {
    EXPECT_GT(m["train_tokens_per_s"].get<double>(), 0);
    EXPECT_GT(m["decode_cached_tokens_per_s"].get<double>(), 0);
    EXPECT_GT(m["decode_uncached_tokens_per_s"].get<double>(), 0);
  }
  EXPECT_NE(run("bench no_such_model").status, 0);
}

// DA (docs/mixers.md): a tiny hybrid with every DA mixer trains from the command line; the
// fixed text sequence is the validation split's start, saved as I64 in model.safetensors;
// `eval --skip-replaced` / `--skip-layers` evaluate it with the DA layers removed; `diagnose`
// gives every DA layer a matrix.
TEST(CliPipeline, DaHybridTrainsSkipsAndDiagnoses) {
  const std::string dir = cli_temp_dir() + "_da";
  std::filesystem::create_directories(dir);
  const std::string corpus = write_corpus(dir);
  std::ofstream(dir + "/da.json") << R"({"name": "da_tiny", "vocab_size": 300, "d_model": 32, "context": 16,
      "dropout": 0.0, "layers": [{"mixer": "fixed_seq_qk", "heads": 4, "ffn": 64}, {"mixer": "attn", "heads": 4, "ffn": 64},
      {"mixer": "rnd_emb_qk", "heads": 4, "ffn": 64}, {"mixer": "attn", "heads": 4, "ffn": 64},
      {"mixer": "taylor", "heads": 4, "ffn": 64}, {"mixer": "nonapprox", "heads": 4, "ffn": 64},
      {"mixer": "static_emb_qk", "heads": 4, "ffn": 64}, {"mixer": "mlp", "heads": 1, "ffn": 64}]})";
  const std::string run_dir = dir + "/run";
  const std::string common = " --cache-dir " + dir + "/cache --threads 1";
  auto train = run_json("train --config " + dir + "/da.json --data " + corpus + " --out " + run_dir +
                        " --steps 20 --batch 8 --json" + common);
  EXPECT_LT(train["val_loss"].get<double>(), std::log(300.0));

  // The safetensors header lists qk_tokens as I64 [16] and qk_random as F32 [16, 32].
  std::ifstream in(run_dir + "/model.safetensors", std::ios::binary);
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  std::string header(n, '\0');
  in.read(header.data(), static_cast<std::streamsize>(n));
  const auto h = nlohmann::json::parse(header);
  EXPECT_EQ(h["qk_tokens"]["dtype"], "I64");
  EXPECT_EQ(h["qk_tokens"]["shape"], nlohmann::json::array({16}));
  EXPECT_EQ(h["qk_random"]["shape"], nlohmann::json::array({16, 32}));

  auto full = run_json("eval " + run_dir + " --json" + common);
  auto replaced = run_json("eval " + run_dir + " --skip-replaced --json" + common);
  auto listed = run_json("eval " + run_dir + " --skip-layers 0,2,4,5,6,7 --json" + common);
  EXPECT_TRUE(full["skipped_layers"].empty());
  EXPECT_EQ(replaced["skipped_layers"], nlohmann::json::array({0, 2, 4, 5, 6, 7}));
  EXPECT_NE(replaced["loss"].get<double>(), full["loss"].get<double>());
  EXPECT_DOUBLE_EQ(replaced["loss"].get<double>(), listed["loss"].get<double>());
  EXPECT_NE(run("eval " + run_dir + " --skip-layers 9" + common).status, 0);

  auto d = run_json("diagnose " + run_dir + " --prompt 'Once upon a time, Lily saw a red ball' --json");
  ASSERT_EQ(d["layers"].size(), 8u);
  const char* kinds[] = {"attention", "attention", "attention", "attention",
                         "attention", "attention", "attention", "jacobian"};
  for (size_t l = 0; l < 8; ++l) EXPECT_EQ(d["layers"][l]["matrix_kind"], kinds[l]) << l;

  auto gen = run_json("generate " + run_dir + " --prompt 'Once upon' --seed 4 --max-tokens 20 --no-stop --json");
  auto again =
      run_json("generate " + run_dir + " --prompt 'Once upon' --seed 4 --max-tokens 20 --no-stop --json --no-cache");
  EXPECT_EQ(again["text"], gen["text"]) << "cached decoding past the context equals recomputing";
}

// ---- probe and ablate (issue 22) --------------------------------------------------------------
TEST(CliPipeline, ProbeAndAblateAgreeWithDiagnoseAndEval) {
  const std::string dir = cli_temp_dir() + "_probe";
  std::filesystem::create_directories(dir);
  const std::string corpus = write_corpus(dir);
  const std::string run_dir = dir + "/run";
  const std::string cache = " --threads 1 --cache-dir " + dir + "/cache";
  run_json("train --config " + dir + "/tiny.json --data " + corpus + " --out " + run_dir +
           " --steps 10 --batch 8 --json" + cache);
  const std::string prompt = " --prompt 'Once upon a time, Lily saw a red ball'";

  // The lens: L+1 streams, K tokens per position, the last stream's KL 0 and no rank at the end.
  auto p = run_json("probe " + run_dir + prompt + " --top 3 --json");
  auto d = run_json("diagnose " + run_dir + prompt + " --json");
  EXPECT_EQ(p["token_ids"], d["token_ids"]);  // tokenised as diagnose does
  const size_t L = p["length"].get<size_t>();
  ASSERT_EQ(p["lens"].size(), 4u);
  for (size_t s = 0; s < 4; ++s) {
    const auto& l = p["lens"][s];
    EXPECT_EQ(l["layer"].get<int>(), static_cast<int>(s) - 1);
    ASSERT_EQ(l["top"].size(), L);
    EXPECT_EQ(l["top"][0].size(), 3u);
    EXPECT_TRUE(l["target_rank"][L - 1].is_null());
    EXPECT_GE(l["target_rank"][0].get<int64_t>(), 1);
  }
  for (const auto& kl : p["lens"][3]["kl_to_final"]) EXPECT_EQ(kl.get<double>(), 0.0);

  // The rollout, recomputed from diagnose's matrices: R_l = (½ mean_h A + ½ I) R_{l-1}.
  std::vector<std::vector<double>> R(L, std::vector<double>(L, 0.0));
  for (size_t i = 0; i < L; ++i) R[i][i] = 1;
  ASSERT_EQ(p["rollout"].size(), 3u);
  for (size_t l = 0; l < 3; ++l) {
    const auto& heads = d["layers"][l]["heads"];
    std::vector<std::vector<double>> A(L, std::vector<double>(L, 0.0)), next = A;
    for (size_t i = 0; i < L; ++i) {
      for (size_t k = 0; k < L; ++k) {
        for (const auto& h : heads) A[i][k] += h["matrix"][i][k].get<double>() / static_cast<double>(heads.size());
        A[i][k] *= 0.5;
      }
      A[i][i] += 0.5;
    }
    for (size_t i = 0; i < L; ++i)
      for (size_t k = 0; k < L; ++k)
        for (size_t j = 0; j < L; ++j) next[i][j] += A[i][k] * R[k][j];
    R = next;
    EXPECT_EQ(p["rollout"][l]["matrix_kind"], d["layers"][l]["matrix_kind"]);
    for (size_t i = 0; i < L; ++i)
      for (size_t j = 0; j < L; ++j) EXPECT_NEAR(p["rollout"][l]["matrix"][i][j].get<double>(), R[i][j], 1e-4);
  }
  // --story-start feeds the prompt as generate does: the last stream's top token is generate's
  // first greedy token.
  auto ps = run_json("probe " + run_dir + prompt + " --story-start --top 1 --json");
  ASSERT_EQ(ps["length"].get<size_t>(), L + 1);
  auto greedy = run_json("generate " + run_dir + prompt + " --temperature 0 --max-tokens 1 --no-stop --json");
  EXPECT_EQ(ps["lens"][3]["top"][L][0]["id"], greedy["tokens"][0]["id"]);
  auto text = run("probe " + run_dir + prompt);
  EXPECT_EQ(text.status, 0);
  EXPECT_NE(text.out.find("logit lens"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("rollout"), std::string::npos) << text.out;

  // Ablation: the base is eval's loss on the same windows; every layer and attention head once.
  const std::string windows = " --windows story_start --max-windows 12" + cache;
  auto a = run_json("ablate " + run_dir + windows + " --json");
  auto e = run_json("eval " + run_dir + windows + " --json");
  EXPECT_EQ(a["base_loss"].get<double>(), e["loss"].get<double>());
  EXPECT_EQ(a["tokens"], e["tokens"]);
  ASSERT_EQ(a["ablations"].size(), 3u + 4u);
  double previous = INFINITY;
  for (const auto& row : a["ablations"]) {
    EXPECT_TRUE(std::isfinite(row["loss"].get<double>()));
    EXPECT_LE(row["delta"].get<double>(), previous);  // ranked
    previous = row["delta"].get<double>();
    EXPECT_TRUE(row["head"].is_null() || row["layer"] == 1) << row;
  }
  // A row is `hsm eval --knock-out` of its layer (or head).
  const auto& top = a["ablations"][0];
  const std::string knock =
      std::to_string(top["layer"].get<int>()) + (top["head"].is_null() ? "" : ":" + std::to_string(top["head"].get<int>()));
  auto k = run_json("eval " + run_dir + windows + " --knock-out " + knock + " --json");
  EXPECT_EQ(k["loss"].get<double>(), top["loss"].get<double>());
  auto bad = run("eval " + run_dir + windows + " --knock-out 0:1");
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.out.find("knock the layer out whole"), std::string::npos) << bad.out;
  bad = run("eval " + run_dir + windows + " --knock-out 5");
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.out.find("layers 0..2"), std::string::npos) << bad.out;
}

// ---- diagnostics over time and what-if (issue 23) --------------------------------------------
namespace {

std::map<std::string, std::string> folder_bytes(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    out[e.path().string()] = std::string(std::istreambuf_iterator<char>(in), {});
  }
  return out;
}

}  // namespace

TEST(CliPipeline, DiagnosticsAreRecordedAndEvalEditsTheModelInMemory) {
  const std::string dir = cli_temp_dir() + "_whatif";
  std::filesystem::create_directories(dir);
  const std::string corpus = write_corpus(dir);
  const std::string run_dir = dir + "/run";
  const std::string cache = " --threads 1 --cache-dir " + dir + "/cache";
  run_json("train --config " + dir + "/tiny.json --data " + corpus + " --out " + run_dir +
           " --steps 30 --batch 8 --eval-every 10 --json" + cache);

  // Three validations, three records; the last is `hsm diagnose` of the recorded prompt.
  std::vector<nlohmann::json> records;
  {
    std::ifstream in(run_dir + "/diagnostics.jsonl");
    for (std::string line; std::getline(in, line);) records.push_back(nlohmann::json::parse(line));
  }
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0]["step"], 10);
  EXPECT_EQ(records[2]["step"], 30);
  const auto& last = records.back();
  EXPECT_EQ(last["prompt"], "Alice was so tired when she got home so she went");
  auto d = run_json("diagnose " + run_dir + " --prompt '" + last["prompt"].get<std::string>() + "' --json --threads 1");
  ASSERT_EQ(d["layers"].size(), last["layers"].size());
  auto near = [](const nlohmann::json& a, const nlohmann::json& b) {
    for (const char* key : {"entropy", "conc", "headdiv", "sink"})
      EXPECT_NEAR(a[key].get<double>(), b[key].get<double>(), 1e-6) << key;
    for (size_t n = 0; n < 4; ++n) EXPECT_NEAR(a["locfoc"][n].get<double>(), b["locfoc"][n].get<double>(), 1e-6);
  };
  for (size_t l = 0; l < d["layers"].size(); ++l) {
    EXPECT_EQ(d["layers"][l]["indicators"].size(), last["layers"][l]["indicators"].size());  // one writer
    near(d["layers"][l]["indicators"], last["layers"][l]["indicators"]);
    for (size_t h = 0; h < d["layers"][l]["heads"].size(); ++h)
      near(d["layers"][l]["heads"][h]["indicators"], last["layers"][l]["heads"][h]["indicators"]);
  }

  const auto before = folder_bytes(run_dir);
  const std::string windows = " --windows story_start --max-windows 12" + cache;
  // --knock-out L is `hsm ablate`'s row for layer L (the top layer here).
  auto a = run_json("ablate " + run_dir + windows + " --json");
  auto k = run_json("eval " + run_dir + windows + " --knock-out 2 --json");
  int rows = 0;
  for (const auto& row : a["ablations"])
    if (row["layer"] == 2 && row["head"].is_null()) {
      EXPECT_EQ(k["loss"].get<double>(), row["loss"].get<double>()) << row;
      ++rows;
    }
  EXPECT_EQ(rows, 1);
  // --set-ab with the trained values changes nothing; other values change the loss.
  auto plain = run_json("eval " + run_dir + windows + " --json");
  const auto& w0 = last["layers"][0]["weights"];
  const auto& w2 = last["layers"][2]["weights"];
  const std::string trained = "0:" + w0["a"][0].dump() + ":" + w0["b"][0].dump() + ",2:" + w2["a"][0].dump() + ":" +
                              w2["b"][0].dump();
  auto same = run_json("eval " + run_dir + windows + " --set-ab " + trained + " --json");
  EXPECT_EQ(same["loss"].get<double>(), plain["loss"].get<double>()) << trained;
  EXPECT_EQ(same["set_ab"].size(), 2u);
  auto changed = run_json("eval " + run_dir + windows + " --set-ab 0:0:0 --knock-out 1:2 --json");
  EXPECT_NE(changed["loss"].get<double>(), plain["loss"].get<double>());
  EXPECT_EQ(changed["edits"], "layer 1 head 2 knocked out; layer 0 a=0 b=0");
  auto text = run("eval " + run_dir + windows + " --set-ab 0:0.5:1.5");
  EXPECT_EQ(text.status, 0);
  EXPECT_NE(text.out.find("a and b set: layer 0 a=0.5 b=1.5"), std::string::npos) << text.out;
  // Bad items: a layer without a and b, and text that is no LAYER:A:B.
  auto bad = run("eval " + run_dir + windows + " --set-ab 1:0.5:1");
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.out.find("layer 1 (attn) has no a and b to set"), std::string::npos) << bad.out;
  bad = run("eval " + run_dir + windows + " --set-ab 0:half:1");
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.out.find("'0:half:1'"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("LAYER:A:B"), std::string::npos) << bad.out;
  EXPECT_EQ(folder_bytes(run_dir), before);  // nothing written into the run

  // Issue 69: `hsm diagnose --record` writes the record training would have written at the
  // checkpoint's step (the bundled models were trained before the records were kept): into a
  // copy of the run without its records, the same record as the trainer's last; again, it is
  // replaced, not doubled; beside the others, they stay in step order.
  const std::string copy = dir + "/copy";
  std::filesystem::copy(run_dir, copy, std::filesystem::copy_options::recursive);
  std::filesystem::remove(copy + "/diagnostics.jsonl");
  std::filesystem::remove(copy + "/.lock");  // as a bundled model's folder, which has none
  auto read_records = [](const std::string& folder) {
    std::vector<nlohmann::json> out;
    std::ifstream in(folder + "/diagnostics.jsonl");
    for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
    return out;
  };
  for (int again = 0; again < 2; ++again) {
    auto recorded = run("diagnose " + copy + " --record --threads 1");
    ASSERT_EQ(recorded.status, 0) << recorded.out;
    EXPECT_NE(recorded.out.find("at step 30"), std::string::npos) << recorded.out;
    const std::vector<nlohmann::json> kept = read_records(copy);
    ASSERT_EQ(kept.size(), 1u);
    EXPECT_EQ(kept[0]["step"], 30);
    EXPECT_EQ(kept[0]["prompt"], last["prompt"]);
    ASSERT_EQ(kept[0]["layers"].size(), last["layers"].size());
    for (size_t l = 0; l < last["layers"].size(); ++l) {
      near(kept[0]["layers"][l]["indicators"], last["layers"][l]["indicators"]);
      EXPECT_EQ(kept[0]["layers"][l]["weights"], last["layers"][l]["weights"]);
      EXPECT_NEAR(kept[0]["layers"][l]["lens_kl"].get<double>(), last["layers"][l]["lens_kl"].get<double>(), 1e-6);
    }
  }
  EXPECT_FALSE(std::filesystem::exists(copy + "/.lock"));  // a folder that had no lock keeps none
  ASSERT_EQ(run("diagnose " + run_dir + " --record --prompt 'Once upon a time' --threads 1").status, 0);
  const std::vector<nlohmann::json> all = read_records(run_dir);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0]["step"], 10);
  EXPECT_EQ(all[2]["step"], 30);
  EXPECT_EQ(all[2]["prompt"], "Once upon a time");
}

// Per-token scores (issue 40): the JSONL file parses back, one line per predicted token, and its
// mean loss is `hsm eval`'s on the same windows; `hsm compare` of two bundled runs on the same
// windows; runs with different tokenizers refused, naming both.
TEST(CliPipeline, PerTokenFileAndCompare) {
  const std::string dir = cli_temp_dir() + "_per_token";
  std::filesystem::create_directories(dir);
  const std::string models = std::string(HSM_RESOURCES_PATH) + "/models/";
  const std::string corpus = std::string(HSM_RESOURCES_PATH) + "/corpus/tinystories-starter.txt";
  const std::string windows = " --data " + corpus + " --max-windows 6 --threads 1 --cache-dir " + dir + "/cache";
  const std::string file = dir + "/tokens.jsonl";
  auto eval = run_json("eval " + models + "hsm_ab" + windows + " --json");
  auto with_file = run_json("eval " + models + "hsm_ab" + windows + " --per-token " + file + " --json");
  EXPECT_EQ(with_file["loss"], eval["loss"]);
  EXPECT_EQ(with_file["accuracy"], eval["accuracy"]);
  std::ifstream in(file);
  std::string line;
  int64_t lines = 0, top1 = 0;
  double sum = 0;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);  // throws (fails the test) if not JSON
    for (const char* key : {"window", "position", "input", "target", "loss", "prob", "rank", "distance", "document"})
      ASSERT_TRUE(j.contains(key)) << key << " missing in " << line;
    EXPECT_EQ(j["position"].get<int64_t>(), lines % 128);
    EXPECT_EQ(j["window"].get<int64_t>(), lines / 128);
    EXPECT_NEAR(j["prob"].get<double>(), std::exp(-j["loss"].get<double>()), 1e-12);
    if (!j["distance"].is_null()) EXPECT_GE(j["distance"].get<int64_t>(), 1);
    sum += j["loss"].get<double>();
    top1 += j["rank"].get<int64_t>() == 1 ? 1 : 0;
    ++lines;
  }
  EXPECT_EQ(lines, eval["tokens"].get<int64_t>());
  EXPECT_EQ(lines, 6 * 128);
  {
    // The target, distance, document and training-count fields against each other, recomputed
    // here (issue 52): a window's targets are its inputs shifted by one; a distance is found by a
    // plain backward scan of the window's inputs (not the engine's map); a token's training
    // count is the same wherever it is the target; documents never go back.
    std::ifstream again(file);
    std::vector<nlohmann::json> rows;
    while (std::getline(again, line)) rows.push_back(nlohmann::json::parse(line));
    ASSERT_EQ(static_cast<int64_t>(rows.size()), lines);
    std::map<int64_t, int64_t> count_of;
    int64_t last_document = -1;
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto& r = rows[i];
      const int64_t pos = r["position"].get<int64_t>(), target = r["target"].get<int64_t>();
      if (pos + 1 < 128) EXPECT_EQ(rows[i + 1]["input"].get<int64_t>(), target) << "row " << i;
      int64_t distance = 0;
      for (int64_t q = pos; q >= 0; --q)
        if (rows[i - static_cast<size_t>(pos - q)]["input"].get<int64_t>() == target) {
          distance = pos + 1 - q;
          break;
        }
      EXPECT_EQ(r["distance"].is_null() ? 0 : r["distance"].get<int64_t>(), distance) << "row " << i;
      const auto [it, fresh] = count_of.emplace(target, r["train_count"].get<int64_t>());
      if (!fresh) EXPECT_EQ(it->second, r["train_count"].get<int64_t>()) << "token " << target;
      EXPECT_GE(r["train_count"].get<int64_t>(), 0);
      EXPECT_GE(r["document"].get<int64_t>(), last_document) << "row " << i;
      last_document = r["document"].get<int64_t>();
    }
    EXPECT_GT(count_of.size(), 50u) << "a real corpus has many distinct targets";
    EXPECT_GT(last_document, 0) << "six windows of the starter corpus span several documents";
  }
  EXPECT_NEAR(sum / static_cast<double>(lines), eval["loss"].get<double>(), 1e-12);
  EXPECT_EQ(static_cast<double>(top1) / static_cast<double>(lines), eval["accuracy"].get<double>());

  auto c = run_json("compare " + models + "hsm_ab " + models + "gpt" + windows + " --top 3 --json");
  auto eval_gpt = run_json("eval " + models + "gpt" + windows + " --json");
  EXPECT_EQ(c["loss_a"], eval["loss"]);
  EXPECT_EQ(c["loss_b"], eval_gpt["loss"]);
  EXPECT_EQ(c["by_position"].size(), 128u);
  EXPECT_EQ(c["by_distance"].back()["bin"], "never");
  ASSERT_FALSE(c["documents"].empty());
  EXPECT_LE(c["documents"].front()["difference"].get<double>(), c["documents"].back()["difference"].get<double>());
  // compare's differences against the two --per-token files, read here: each token's B - A,
  // the three largest each way, the mean per position and per document.
  const std::string file_gpt = dir + "/tokens-gpt.jsonl";
  run_json("eval " + models + "gpt" + windows + " --per-token " + file_gpt + " --json");
  std::vector<nlohmann::json> ta, tb;
  for (const auto& [path, into] : {std::pair{file, &ta}, std::pair{file_gpt, &tb}}) {
    std::ifstream f(path);
    for (std::string l; std::getline(f, l);) into->push_back(nlohmann::json::parse(l));
  }
  ASSERT_EQ(ta.size(), tb.size());
  struct Diff {
    int64_t window, position;
    double difference;
  };
  std::vector<Diff> diffs;
  std::map<int64_t, std::pair<double, double>> doc_a_b;  // per document: the sums of A's and B's losses
  std::map<int64_t, int64_t> doc_tokens;
  double total = 0;
  for (size_t i = 0; i < ta.size(); ++i) {
    ASSERT_EQ(ta[i]["target"], tb[i]["target"]) << "the same windows";
    ASSERT_EQ(ta[i]["window"], tb[i]["window"]);
    ASSERT_EQ(ta[i]["position"], tb[i]["position"]);
    const double d = tb[i]["loss"].get<double>() - ta[i]["loss"].get<double>();
    diffs.push_back({ta[i]["window"].get<int64_t>(), ta[i]["position"].get<int64_t>(), d});
    total += d;
    const int64_t doc = ta[i]["document"].get<int64_t>();
    doc_a_b[doc].first += ta[i]["loss"].get<double>();
    doc_a_b[doc].second += tb[i]["loss"].get<double>();
    ++doc_tokens[doc];
  }
  EXPECT_NEAR(c["mean_difference"].get<double>(), total / static_cast<double>(ta.size()), 1e-9);
  std::vector<Diff> sorted = diffs;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Diff& x, const Diff& y) { return x.difference < y.difference; });
  ASSERT_LT(sorted[2].difference, 0) << "fewer than 3 tokens where gpt beats hsm_ab: pick other windows";
  ASSERT_GT(sorted[sorted.size() - 3].difference, 0) << "fewer than 3 tokens where hsm_ab beats gpt";
  ASSERT_EQ(c["b_better"].size(), 3u);
  ASSERT_EQ(c["a_better"].size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    const Diff& b = sorted[k];
    const Diff& a = sorted[sorted.size() - 1 - k];
    EXPECT_EQ(c["b_better"][k]["window"], b.window) << k;
    EXPECT_EQ(c["b_better"][k]["position"], b.position) << k;
    EXPECT_NEAR(c["b_better"][k]["difference"].get<double>(), b.difference, 1e-12) << k;
    EXPECT_EQ(c["a_better"][k]["window"], a.window) << k;
    EXPECT_EQ(c["a_better"][k]["position"], a.position) << k;
    EXPECT_NEAR(c["a_better"][k]["difference"].get<double>(), a.difference, 1e-12) << k;
  }
  for (const auto& row : c["by_position"]) {
    const int64_t p = std::stoll(row["bin"].get<std::string>());
    double sum = 0;
    int64_t n = 0;
    for (const Diff& d : diffs)
      if (d.position == p) sum += d.difference, ++n;
    EXPECT_EQ(row["tokens"].get<int64_t>(), n) << "position " << p;
    EXPECT_NEAR(row["difference"].get<double>(), sum / static_cast<double>(n), 1e-9) << "position " << p;
  }
  ASSERT_EQ(c["documents"].size(), doc_tokens.size());
  for (const auto& row : c["documents"]) {
    const int64_t doc = row["document"].get<int64_t>();
    ASSERT_TRUE(doc_tokens.count(doc)) << row;
    EXPECT_EQ(row["tokens"].get<int64_t>(), doc_tokens[doc]);
    const double n = static_cast<double>(doc_tokens[doc]);
    EXPECT_NEAR(row["difference"].get<double>(), doc_a_b[doc].second / n - doc_a_b[doc].first / n, 1e-9) << row;
  }
  auto table = run("compare " + models + "hsm_ab " + models + "gpt" + windows);
  EXPECT_EQ(table.status, 0) << table.out;
  EXPECT_NE(table.out.find("Loss by distance"), std::string::npos) << table.out;

  // A run with a tokenizer of its own (vocabulary 300) against hsm_ab's.
  const std::string own = write_corpus(dir);
  run_json("train --config " + dir + "/tiny.json --data " + own + " --out " + dir + "/run --steps 2 --batch 4 --json" +
           " --threads 1 --cache-dir " + dir + "/cache");
  auto refused = run("compare " + dir + "/run " + models + "hsm_ab" + windows);
  EXPECT_NE(refused.status, 0);
  EXPECT_NE(refused.out.find("different tokenizers"), std::string::npos) << refused.out;
  EXPECT_NE(refused.out.find("8f7743b0d8ef23a5"), std::string::npos) << refused.out;  // hsm_ab's
  EXPECT_NE(refused.out.find("vocabulary 300"), std::string::npos) << refused.out;     // the run's own
}

// ---- one truth per number (issue 36) ------------------------------------------------------
namespace {

// The validation loss of a run's last "eval" record in metrics.jsonl: what its curves show.
double last_val_loss(const std::string& run_dir) {
  std::ifstream in(run_dir + "/metrics.jsonl");
  std::string line;
  double loss = NAN;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    if (j["kind"] == "eval") loss = j["val_loss"].get<double>();
  }
  return loss;
}

}  // namespace

// `hsm eval` and `hsm ablate` without --windows score the windows the run was trained on, so
// their loss is the one the run's curves show (a run trained on story-start windows read 0.1 to
// 0.5 nats apart on packed ones, and the ranking of two models flipped); every output names the
// windows and how many. `hsm eval A B` scores both on the same windows in one table, refusing
// runs trained on different windows unless --windows says which.
TEST(CliPipeline, EvalScoresTheWindowsTheRunWasTrainedOn) {
  const std::string dir = cli_temp_dir() + "_windows";
  std::filesystem::create_directories(dir);
  const std::string corpus = write_corpus(dir);
  const std::string common = " --threads 1 --cache-dir " + dir + "/cache";
  const std::string train = "train --config " + dir + "/tiny.json --data " + corpus +
                            " --steps 12 --batch 8 --eval-every 6 --eval-batches 0 --tokenizer ";
  run_json("tokenizer train --data " + corpus + " --vocab 300 --out " + dir + "/tok.model --json");
  run_json(train + dir + "/tok.model --windows story_start --out " + dir + "/story --json" + common);
  run_json(train + dir + "/tok.model --out " + dir + "/packed --json" + common);  // the default: packed

  auto e = run_json("eval " + dir + "/story --json" + common);
  EXPECT_EQ(e["windows"], "story_start");
  EXPECT_EQ(e["trained_windows"], "story_start");
  EXPECT_GT(e["window_count"].get<int64_t>(), 0);
  EXPECT_EQ(e["tokens"].get<int64_t>(), e["window_count"].get<int64_t>() * 32);  // context 32
  EXPECT_NEAR(e["loss"].get<double>(), last_val_loss(dir + "/story"), 1e-4);
  auto packed = run_json("eval " + dir + "/story --windows packed --json" + common);
  EXPECT_EQ(packed["windows"], "packed");
  EXPECT_GT(std::abs(packed["loss"].get<double>() - e["loss"].get<double>()), 1e-3)  // else the test proves nothing
      << "packed and story-start windows give the same loss on this corpus";
  auto p = run_json("eval " + dir + "/packed --json" + common);
  EXPECT_EQ(p["windows"], "packed");
  EXPECT_NEAR(p["loss"].get<double>(), last_val_loss(dir + "/packed"), 1e-4);

  auto a = run_json("ablate " + dir + "/story --json" + common);
  EXPECT_EQ(a["windows"], "story_start");
  EXPECT_EQ(a["window_count"], e["window_count"]);
  EXPECT_EQ(a["base_loss"], e["loss"]);

  auto text = run("eval " + dir + "/story" + common);
  EXPECT_EQ(text.status, 0) << text.out;
  EXPECT_NE(text.out.find("story_start windows (as trained, " + std::to_string(e["window_count"].get<int64_t>()) +
                          " windows)"),
            std::string::npos)
      << text.out;

  // Several runs: one table on the same windows, each loss its own `hsm eval`'s.
  auto refused = run("eval " + dir + "/story " + dir + "/packed" + common);
  EXPECT_NE(refused.status, 0);
  EXPECT_NE(refused.out.find("different windows"), std::string::npos) << refused.out;
  EXPECT_NE(refused.out.find("--windows"), std::string::npos) << refused.out;
  auto both = run_json("eval " + dir + "/story " + dir + "/packed --windows story_start --json" + common);
  EXPECT_EQ(both["windows"], "story_start");
  EXPECT_EQ(both["window_count"], e["window_count"]);
  ASSERT_EQ(both["runs"].size(), 2u);
  EXPECT_EQ(both["runs"][0]["run"], dir + "/story");
  EXPECT_EQ(both["runs"][0]["loss"], e["loss"]);
  EXPECT_EQ(both["runs"][1]["trained_windows"], "packed");
  auto p_story = run_json("eval " + dir + "/packed --windows story_start --json" + common);
  EXPECT_EQ(both["runs"][1]["loss"], p_story["loss"]);
  auto table = run("eval " + dir + "/story " + dir + "/packed --windows packed" + common);
  EXPECT_EQ(table.status, 0) << table.out;
  EXPECT_NE(table.out.find("the same " + std::to_string(packed["window_count"].get<int64_t>()) + " windows"),
            std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find(dir + "/packed"), std::string::npos) << table.out;

  // A run with a tokenizer of its own (trained on other text): per-token losses of different
  // token streams.
  {
    std::ofstream other(dir + "/other.txt");
    for (int s = 0; s < 200; ++s) {
      for (int k = 0; k < 5; ++k) other << "The dog ran to the big green tree " << s % 5 << " and barked twice. ";
      other << "\n<|endoftext|>\n";
    }
  }
  run_json("train --config " + dir + "/tiny.json --data " + dir + "/other.txt --steps 2 --batch 4 --out " + dir +
           "/own --json" + common);
  refused = run("eval " + dir + "/packed " + dir + "/own" + common);
  EXPECT_NE(refused.status, 0);
  EXPECT_NE(refused.out.find("different tokenizers"), std::string::npos) << refused.out;
  refused = run("eval " + dir + "/packed " + dir + "/packed --knock-out 0" + common);
  EXPECT_NE(refused.status, 0);
  EXPECT_NE(refused.out.find("one run"), std::string::npos) << refused.out;
}

// `hsm train --config FILE` starts from the file's "training" object as `--preset` does from a
// preset's; a flag on the command line still wins.
TEST(CliPipeline, ConfigFileTrainingBlockIsHonoured) {
  const std::string dir = cli_temp_dir() + "_config_training";
  std::filesystem::create_directories(dir);
  const std::string corpus = write_corpus(dir);
  std::ofstream(dir + "/trained.json") << R"({"name": "tiny", "vocab_size": 300, "d_model": 32, "context": 32,
      "layers": [{"mixer": "hsm_ab", "ffn": 64}],
      "training": {"steps": 3, "batch_size": 4, "lr": 0.001, "windows": "story_start", "eval_every": 0}})";
  const std::string common = " --threads 1 --cache-dir " + dir + "/cache";
  auto t =
      run_json("train --config " + dir + "/trained.json --data " + corpus + " --out " + dir + "/a --json" + common);
  EXPECT_EQ(t["steps"], 3);
  nlohmann::json stored;
  std::ifstream(dir + "/a/config.json") >> stored;
  EXPECT_EQ(stored["training"]["batch_size"], 4);
  EXPECT_EQ(stored["training"]["lr"], 0.001);
  EXPECT_EQ(stored["training"]["windows"], "story_start");
  t = run_json("train --config " + dir + "/trained.json --data " + corpus + " --out " + dir + "/b --batch 2 --json" +
               common);
  EXPECT_EQ(t["steps"], 3);
  std::ifstream(dir + "/b/config.json") >> stored;
  EXPECT_EQ(stored["training"]["batch_size"], 2);  // the flag
  EXPECT_EQ(stored["training"]["lr"], 0.001);      // the file
  std::ofstream(dir + "/bad.json") << R"({"name": "tiny", "vocab_size": 300, "d_model": 32, "context": 32,
      "layers": [{"mixer": "hsm_ab"}], "training": {"batch_size": -4}})";
  auto bad = run("train --config " + dir + "/bad.json --data " + corpus + " --out " + dir + "/c" + common);
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.out.find("bad.json"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("batch_size"), std::string::npos) << bad.out;
}

// ---- information flow routes (issue 51) -------------------------------------------------------
// `hsm trace --routes` on the bundled hsm_ab: every mixer edge is a shift of its layer (2^l) or
// the position itself, threshold 0 keeps more than the default, above 1 nothing; the answer
// position is the trace's. --example still reaches the engine without --corrupt (a corpus run
// refuses it in the engine's words).
TEST(CliPipeline, TraceRoutesFollowTheShifts) {
  const std::string model = std::string(HSM_RESOURCES_PATH) + "/models/hsm_ab";
  const std::string prompt = " --prompt 'Once upon a time, there was a girl named Lily. One day,' --threads 1";
  auto all = run_json("trace " + model + prompt + " --routes --threshold 0 --json");
  auto kept = run_json("trace " + model + prompt + " --routes --json");
  auto none = run_json("trace " + model + prompt + " --routes --threshold 1.5 --json");
  EXPECT_EQ(kept["threshold"], 0.04);
  EXPECT_EQ(all["answer_position"].get<int64_t>(), all["positions"].get<int64_t>() - 1);
  EXPECT_GT(all["edges"].size(), kept["edges"].size());
  EXPECT_GT(kept["edges"].size(), 0u);
  EXPECT_EQ(none["edges"].size(), 0u);
  size_t mixer = 0;
  for (const auto& e : all["edges"]) {
    const int64_t l = e["layer"], from = e["from"], to = e["to"];
    if (e["kind"] != "mixer") {
      EXPECT_EQ(from, to);
      continue;
    }
    ++mixer;
    EXPECT_TRUE(to - from == 0 || to - from == (int64_t{1} << l)) << "layer " << l << ": " << from << " -> " << to;
  }
  EXPECT_GT(mixer, 0u);
  auto at = run_json("trace " + model + prompt + " --routes --answer-position 5 --json");
  EXPECT_EQ(at["answer_position"], 5);
  const Result example = run("trace " + model + " --example 0 --threads 1");
  EXPECT_NE(example.status, 0);
  EXPECT_NE(example.out.find("trained on a corpus"), std::string::npos) << example.out;
  const Result no_corrupt = run("trace " + model + prompt);
  EXPECT_NE(no_corrupt.status, 0);
  EXPECT_NE(no_corrupt.out.find("--corrupt"), std::string::npos) << no_corrupt.out;
}

// ---- a mechanism forming (issue 67) ---------------------------------------------------------------
// A task run with snapshots: `hsm trace --over-training` prints the recorded series; the record of
// an earlier step is `hsm trace --step S` on that step's snapshot (1e-6); probe and diagnose open
// the snapshot too; a step without a model is refused naming the kept ones.
TEST(CliPipeline, TracesOverTrainingAndSnapshots) {
  const std::string dir = cli_temp_dir() + "/formation";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/attn2.json") << R"({"name": "attn2", "vocab_size": 32, "d_model": 32, "context": 16, "dropout": 0,
      "layers": [{"mixer": "attn", "ffn": 64, "heads": 4}, {"mixer": "attn", "ffn": 64, "heads": 4}]})";
  const std::string out = dir + "/run";
  const Result trained = run("train --task mqar:vocab=32,pairs=2,context=16 --config " + dir + "/attn2.json --out " + out +
                             " --steps 20 --batch 8 --eval-every 10 --snapshot-every 10 --threads 1 --device cpu");
  ASSERT_EQ(trained.status, 0) << trained.out;
  const auto series = run_json("trace " + out + " --over-training --json");
  ASSERT_EQ(series["points"].size(), 2u);
  EXPECT_EQ(series["points"][0]["step"], 10);
  EXPECT_EQ(series["points"][1]["step"], 20);
  EXPECT_EQ(series["points"][0]["mixer_effect"].size(), 2u);
  EXPECT_TRUE(series["summary"].is_string());
  const Result table = run("trace " + out + " --over-training");
  EXPECT_EQ(table.status, 0) << table.out;
  EXPECT_NE(table.out.find("route share"), std::string::npos) << table.out;

  // The record of step 10 against the trace of step 10's snapshot (the newest model is step 20's).
  std::ifstream log(out + "/traces.jsonl");
  std::string first_line;
  std::getline(log, first_line);
  const auto record = nlohmann::json::parse(first_line);
  ASSERT_EQ(record["step"], 10);
  const auto at10 = run_json("trace " + out + " --example 0 --step 10 --no-attribution --threads 1 --json");
  const auto now = run_json("trace " + out + " --example 0 --no-attribution --threads 1 --json");
  double largest = 0, moved = 0;
  for (const char* site : {"residual", "mixer", "ffn"})
    for (size_t l = 0; l < at10["exact"][site].size(); ++l)
      for (size_t p = 0; p < at10["exact"][site][l].size(); ++p) {
        const auto& a = record["exact"][site][l][p];
        const auto& b = at10["exact"][site][l][p];
        ASSERT_EQ(a.is_null(), b.is_null()) << site << " " << l << " " << p;
        if (a.is_null()) continue;
        largest = std::max(largest, std::abs(a.get<double>() - b.get<double>()));
        moved = std::max(moved, std::abs(a.get<double>() - now["exact"][site][l][p].get<double>()));
      }
  EXPECT_LT(largest, 1e-6);
  EXPECT_GT(moved, 1e-4) << "steps 10 and 20 gave the same map: the test would not see a wrong snapshot";
  EXPECT_EQ(run("probe " + out + " --example 0 --step 10 --threads 1").status, 0);
  EXPECT_EQ(run("diagnose " + out + " --example 0 --step 10 --threads 1").status, 0);
  const Result none = run("trace " + out + " --example 0 --step 5");
  EXPECT_NE(none.status, 0);
  EXPECT_NE(none.out.find("keeps no model of step 5; it keeps steps 10, 20"), std::string::npos) << none.out;
  // A run without traces says how to record them.
  const Result bare = run("trace " + std::string(HSM_RESOURCES_PATH) + "/models/hsm_ab --over-training");
  EXPECT_NE(bare.status, 0);
  EXPECT_NE(bare.out.find("--trace-text"), std::string::npos) << bare.out;
}

// ---- a bundled model on a machine without its corpus -----------------------------------------
// The bundled models' config.json names the corpus of the machine that trained them; `hsm eval`
// and `hsm ablate` without --data scored nothing on any other machine ("... does not exist").
// They now take the starter corpus that ships beside the models and say so on stderr; a user's
// copy of the same folder is not silently scored on another corpus.
TEST(CliPipeline, ABundledModelWhoseCorpusIsMissingIsScoredOnTheStarterCorpus) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(cli_temp_dir() + "_elsewhere") / "resources";
  fs::remove_all(root.parent_path());
  fs::create_directories(root / "corpus");
  fs::create_directories(root / "models");
  fs::copy(HSM_RESOURCES_PATH "/presets", root / "presets", fs::copy_options::recursive);
  fs::copy(HSM_RESOURCES_PATH "/corpus/tinystories-starter.txt", root / "corpus" / "tinystories-starter.txt");
  fs::copy(HSM_RESOURCES_PATH "/models/hsm_ab", root / "models" / "hsm_ab", fs::copy_options::recursive);
  const std::string missing = "/nonexistent/machine-that-trained-it/tinystories-sample.txt";
  {
    const fs::path config = root / "models" / "hsm_ab" / "config.json";
    nlohmann::json c = nlohmann::json::parse(std::ifstream(config));
    c["data"]["path"] = missing;
    std::ofstream(config) << c.dump(2);
  }
  auto hsm = [&](const std::string& args) {
    const std::string cmd = "env HSM_RESOURCES='" + root.string() + "' '" + HSM_CLI_PATH + "' " + args +
                            " --threads 1 --max-windows 2 --cache-dir '" + root.parent_path().string() + "/cache'";
    Result r{-1, ""}, err{-1, ""};
    const std::string stderr_file = root.parent_path().string() + "/stderr.txt";
    FILE* pipe = popen((cmd + " 2>'" + stderr_file + "'").c_str(), "r");
    std::array<char, 4096> buf{};
    size_t n;
    while (pipe && (n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
    const int st = pipe ? pclose(pipe) : -1;
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    std::ifstream in(stderr_file);
    err.out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    return std::make_pair(r, err.out);
  };
  const std::string starter = (root / "corpus" / "tinystories-starter.txt").string();
  const auto [eval, note] = hsm("eval '" + (root / "models" / "hsm_ab").string() + "' --json");
  ASSERT_EQ(eval.status, 0) << eval.out << note;
  const auto j = nlohmann::json::parse(eval.out);
  EXPECT_EQ(j["data"], starter);
  EXPECT_TRUE(std::isfinite(j["loss"].get<double>()));
  EXPECT_NE(note.find(missing), std::string::npos) << note;
  EXPECT_NE(note.find("starter corpus"), std::string::npos) << note;

  const auto [ablate, ablate_note] = hsm("ablate '" + (root / "models" / "hsm_ab").string() + "' --json");
  ASSERT_EQ(ablate.status, 0) << ablate.out << ablate_note;
  EXPECT_EQ(nlohmann::json::parse(ablate.out)["base_loss"], j["loss"]);

  // A user's copy: its recorded corpus, which is missing, is refused by name.
  const fs::path copy = root.parent_path() / "my-hsm_ab";
  fs::copy(root / "models" / "hsm_ab", copy, fs::copy_options::recursive);
  const auto [refused, why] = hsm("eval '" + copy.string() + "'");
  EXPECT_NE(refused.status, 0);
  EXPECT_NE((refused.out + why).find(missing), std::string::npos) << refused.out << why;
}
