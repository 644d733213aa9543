// The `hsm` command-line tool, run as a user would: exit codes, JSON that parses, errors.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/wait.h>

namespace {

struct Result {
  int status;
  std::string out;  // stdout and stderr together
};

Result run(const std::string& args) {
  const std::string cmd = std::string("HSM_RESOURCES='") + HSM_RESOURCES_PATH + "' '" + HSM_CLI_PATH + "' " + args + " 2>&1";
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
  const std::string path = ::testing::TempDir() + "/tiny.json";
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

  const std::string bad = ::testing::TempDir() + "/bad.json";
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
