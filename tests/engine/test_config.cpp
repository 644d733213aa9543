// Model configs: validation names the field and the problem; JSON round-trips exactly;
// every preset loads and validates.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "hsm/config.h"
#include "hsm/cost.h"
#include "hsm/mixer_kind.h"
#include "hsm/params.h"
#include "hsm/presets.h"
#include "hsm/run_folder.h"

using namespace hsm;

namespace {

ModelConfig small_config(const std::string& mixer = "hsm_ab", int64_t layers = 3) {
  ModelConfig c;
  c.name = "small";
  c.vocab_size = 50;
  c.d_model = 16;
  c.context = 16;
  for (int64_t l = 0; l < layers; ++l) c.layers.push_back({mixer, 32, mixer_info(mixer).multi_head ? 4 : 1});
  return c;
}

// Runs validate() and returns the message, or "" when the config is accepted.
std::string problem(const ModelConfig& c) {
  try {
    validate(c);
  } catch (const ConfigError& e) {
    return e.message;
  }
  return "";
}

}  // namespace

TEST(Config, AcceptsEveryMixer) {
  for (const auto& m : all_mixers()) EXPECT_EQ(problem(small_config(m.id)), "") << m.id;
}

TEST(Config, UnknownMixerNamesFieldAndKnownIds) {
  auto c = small_config();
  c.layers[1].mixer = "hsm_xyz";
  const auto msg = problem(c);
  EXPECT_NE(msg.find("layers[1].mixer"), std::string::npos) << msg;
  EXPECT_NE(msg.find("hsm_xyz"), std::string::npos) << msg;
  EXPECT_NE(msg.find("hsm_ab_mh_ext"), std::string::npos) << msg;  // lists the known ids
}

TEST(Config, HeadsMustDivideWidth) {
  auto c = small_config("attn");
  c.layers[2].heads = 3;
  const auto msg = problem(c);
  EXPECT_NE(msg.find("layers[2].heads"), std::string::npos) << msg;
  EXPECT_NE(msg.find("does not divide d_model 16"), std::string::npos) << msg;
}

TEST(Config, SingleHeadMixerRejectsHeads) {
  auto c = small_config("hsm_ab");
  c.layers[0].heads = 4;
  EXPECT_NE(problem(c).find("layers[0].heads"), std::string::npos);
}

TEST(Config, ShiftsMustStayInsideContext) {
  auto c = small_config("hsm_ab", 4);  // shifts 1, 2, 4, 8 < 16: fine
  EXPECT_EQ(problem(c), "");
  c.layers.push_back({"hsm_ab", 32, 1});  // layer 4 shifts by 16 = context
  const auto msg = problem(c);
  EXPECT_NE(msg.find("layers[4].mixer"), std::string::npos) << msg;
  EXPECT_NE(msg.find("context 16"), std::string::npos) << msg;
  // Attention at that depth is fine.
  c.layers[4] = {"attn", 32, 4};
  EXPECT_EQ(problem(c), "");
}

TEST(Config, NegativeAndZeroSizes) {
  auto c = small_config();
  c.layers[0].ffn = -5;
  EXPECT_NE(problem(c).find("layers[0].ffn: -5"), std::string::npos);
  c = small_config();
  c.d_model = 0;
  EXPECT_NE(problem(c).find("d_model"), std::string::npos);
  c = small_config();
  c.vocab_size = -1;
  EXPECT_NE(problem(c).find("vocab_size"), std::string::npos);
  c = small_config();
  c.context = 0;
  EXPECT_NE(problem(c).find("context"), std::string::npos);
  c = small_config();
  c.dropout = 1.0;
  EXPECT_NE(problem(c).find("dropout"), std::string::npos);
  c = small_config();
  c.layers.clear();
  EXPECT_NE(problem(c).find("layers"), std::string::npos);
}

TEST(Config, JsonRoundTripIsExact) {
  for (const auto& name : preset_names()) {
    const ModelConfig c = load_preset(name);
    const ModelConfig back = config_from_json(to_json(c));
    EXPECT_EQ(back, c) << name;
    EXPECT_EQ(to_json(back), to_json(c)) << name;
  }
  auto c = small_config("hsm_gate2");
  c.dropout = 0.123456789;
  c.description = "ünïcode ✓";
  EXPECT_EQ(config_from_json(to_json(c, -1)), c);
}

TEST(Config, JsonErrorsNameTheProblem) {
  auto expect_error = [](const std::string& text, const std::string& needle) {
    try {
      config_from_json(text, "my.json");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const ConfigError& e) {
      EXPECT_NE(e.message.find(needle), std::string::npos) << e.message;
      EXPECT_NE(e.message.find("my.json"), std::string::npos) << e.message;
    }
  };
  expect_error("{not json", "not valid JSON");
  expect_error(R"({"layers": [], "dmodel": 3})", "unknown key 'dmodel'");
  expect_error(R"({"layers": "attn"})", "layers");
  expect_error(R"({"d_model": "big", "layers": [{"mixer": "attn"}]})", "d_model");
  expect_error(R"({"layers": [{"mixer": "attn", "ffn": 1.5}]})", "ffn");
  expect_error(R"({"layers": [{"mixer": "attn", "hedas": 2}]})", "unknown key 'hedas'");
  expect_error(R"({"layers": [{"mixer": "nope"}]})", "layers[0].mixer");
}

// Found by fuzz/fuzz_config.cpp (fuzz/corpus/config/regression-number-overflow): a number too
// large for a double is no parse_error to the JSON library but an out_of_range, which escaped
// config_from_json as a raw library error.
TEST(Config, NumberOutOfRangeIsAJsonError) {
  try {
    config_from_json(R"({"dropout": 1e999, "layers": [{"mixer": "attn"}]})", "my.json");
    ADD_FAILURE() << "accepted 1e999";
  } catch (const ConfigError& e) {
    EXPECT_NE(e.message.find("my.json: not valid JSON"), std::string::npos) << e.message;
    EXPECT_NE(e.message.find("number overflow"), std::string::npos) << e.message;
  }
}

// Found by fuzz/fuzz_config.cpp's checks (fuzz/corpus/config/regression-huge-sizes): a
// vocabulary and width of 2^62 passed validation, and count_params overflowed int64 on them
// (UBSan). validate() bounds the sizes now; what it accepts is counted without overflow.
TEST(Config, HugeSizesAreRefusedAndAcceptedOnesCountWithoutOverflow) {
  try {
    config_from_json(R"({"vocab_size": 4611686018427387904, "d_model": 4611686018427387904,
                         "layers": [{"mixer": "attn", "heads": 1}]})",
                     "huge.json");
    ADD_FAILURE() << "accepted vocab_size and d_model 2^62";
  } catch (const ConfigError& e) {
    EXPECT_NE(e.message.find("huge.json: vocab_size: 4611686018427387904"), std::string::npos) << e.message;
  }
  // Above 2^63 - 1 in JSON: named as too large, not wrapped to a negative number.
  try {
    config_from_json(R"({"d_model": 18446744073709551615, "layers": [{"mixer": "attn"}]})");
    ADD_FAILURE() << "accepted 2^64 - 1";
  } catch (const ConfigError& e) {
    EXPECT_NE(e.message.find("d_model: 18446744073709551615 is too large"), std::string::npos) << e.message;
  }
  // The largest context and width, with the mixer whose count grows fastest (context × d²).
  ModelConfig c = small_config("she", 1);
  c.vocab_size = 65536;
  c.d_model = 16384;
  c.context = 65536;
  ASSERT_EQ(problem(c), "");
  EXPECT_EQ(count_params(c).layers[0].mixer, (int64_t{65536} + 2) * 16384 * 16384);
  EXPECT_GT(model_macs_per_token(c, c.context), int64_t{65536} * 16384 * 16384);
}

// Found by review while fuzzing (fuzz/corpus/config/regression-deep-nesting, shallower): the
// message for a value of the wrong type printed the whole value, recursively; a million
// nested arrays overflowed the stack. Messages now show a nested value by kind and size.
TEST(Config, DeeplyNestedValueIsRefusedWithoutPrintingIt) {
  const int depth = 1000000;
  const std::string text = R"({"name": )" + std::string(depth, '[') + std::string(depth, ']') + R"(, "layers": []})";
  try {
    config_from_json(text, "deep.json");
    ADD_FAILURE() << "accepted a nested name";
  } catch (const ConfigError& e) {
    EXPECT_NE(e.message.find("deep.json: name: wrong type (an array of 1 items)"), std::string::npos) << e.message;
  }
}

TEST(Config, MissingLayerFieldsTakeThePapersValues) {
  const auto c = config_from_json(R"({"layers": [{"mixer": "hsm_gate2"}, {"mixer": "attn"}]})");
  EXPECT_EQ(c.layers[0].ffn, 960);
  EXPECT_EQ(c.layers[0].heads, 4);
  EXPECT_EQ(c.layers[1].ffn, 512);
  EXPECT_EQ(c.layers[1].heads, 8);
}

TEST(Config, SaveAndLoadFile) {
  const std::string path = ::testing::TempDir() + "/cfg.json";
  const auto c = small_config("hsm_fusion");
  save_config(c, path);
  EXPECT_EQ(load_config(path), c);
  EXPECT_THROW(load_config(::testing::TempDir() + "/missing.json"), std::runtime_error);
}

TEST(Presets, EveryTableOneRowIsThere) {
  const auto names = preset_names();
  for (const char* want : {"gpt", "hsm_ab", "hsm_ab_vec", "hsm_AB", "hsm_gate1", "hsm_gate2", "hsm_fusion",
                           "hsm_ab_mh", "hsm_ab_mh_ext", "hybrid_0_6", "hybrid_mh_0_6", "hsm_0_1_2_4_5_6"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
}

TEST(Presets, PaperWidthsHeadsAndLayout) {
  for (const auto& name : preset_names()) {
    if (name.rfind("ex_", 0) == 0) continue;  // EX Table 1's presets: test_extractors.cpp
    if (name == kStarterPreset) continue;     // not the paper's: test_starter.cpp
    const auto c = load_preset(name);
    EXPECT_EQ(c.name, name);
    EXPECT_EQ(c.vocab_size, 5000);
    EXPECT_EQ(c.d_model, 256);
    EXPECT_EQ(c.context, 128);
    EXPECT_DOUBLE_EQ(c.dropout, 0.1);
    ASSERT_EQ(c.layers.size(), 7u) << name;
    for (const auto& l : c.layers) {
      EXPECT_EQ(l.ffn, mixer_info(l.mixer).paper_ffn) << name << " " << l.mixer;
      EXPECT_EQ(l.heads, mixer_info(l.mixer).default_heads) << name << " " << l.mixer;
    }
  }
  const auto hybrid = load_preset("hybrid_0_6");
  EXPECT_EQ(hybrid.layers[0].mixer, "hsm_ab");
  EXPECT_EQ(hybrid.layers[6].mixer, "hsm_ab");
  for (int l = 1; l < 6; ++l) EXPECT_EQ(hybrid.layers[l].mixer, "attn");
  const auto fig7 = load_preset("hsm_0_1_2_4_5_6");
  for (int l = 0; l < 7; ++l) EXPECT_EQ(fig7.layers[l].mixer, l == 3 ? "attn" : "hsm_ab");
  EXPECT_EQ(load_preset("hybrid_mh_0_6").layers[6].mixer, "hsm_ab_mh");
}

TEST(Presets, UnknownNameListsKnownOnes) {
  try {
    load_preset("gtp");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("hybrid_0_6"), std::string::npos);
  }
}

// A preset's name is the preset even where the working directory holds a folder of that name
// (a run called ex_he in /tmp made `hsm lab` refuse "ex_he/config.json" there); `./name` is the
// folder.
TEST(Presets, ANameIsThePresetWhateverTheWorkingDirectoryHolds) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / ("hsm_preset_cwd_" + std::to_string(::getpid()));
  fs::create_directories(dir / "ex_he");
  std::ofstream(dir / "ex_he" / "config.json") << "{}";
  const fs::path before = fs::current_path();
  fs::current_path(dir);
  ModelConfig preset;
  EXPECT_NO_THROW(preset = load_preset_or_config("ex_he"));
  EXPECT_EQ(preset.name, load_preset("ex_he").name);
  EXPECT_THROW(load_preset_or_config("./ex_he"), std::exception);  // the folder, which is no run
  fs::current_path(before);
  fs::remove_all(dir);
}

TEST(Shifts, SingleShiftFollowsStackPosition) {
  EXPECT_EQ(layer_shifts(MixerKind::ShiftAB, 0, 1), std::vector<int64_t>{1});
  EXPECT_EQ(layer_shifts(MixerKind::ShiftAB, 6, 1), std::vector<int64_t>{64});
  EXPECT_EQ(layer_shifts(MixerKind::ShiftGate2, 3, 4), std::vector<int64_t>{8});
  EXPECT_TRUE(layer_shifts(MixerKind::Attention, 3, 8).empty());
}

TEST(Shifts, MultiheadSameInEveryLayer) {
  const std::vector<int64_t> want = {1, 2, 4, 8, 16, 32, 64, 128};
  for (int64_t l = 0; l < 7; ++l) EXPECT_EQ(layer_shifts(MixerKind::ShiftABMultihead, l, 8), want);
}

TEST(Shifts, MultiheadExtRotatesWithLayer) {
  // HSM §7: [1..128] -> [2,4,...,128,1] -> ... -> [64,128,1,...,32]
  for (int64_t l = 0; l < 7; ++l) {
    const auto s = layer_shifts(MixerKind::ShiftABMultiheadExt, l, 8);
    for (int64_t j = 0; j < 8; ++j) EXPECT_EQ(s[j], int64_t{1} << ((j + l) % 8)) << "layer " << l << " head " << j;
  }
  EXPECT_EQ(layer_shifts(MixerKind::ShiftABMultiheadExt, 6, 8), (std::vector<int64_t>{64, 128, 1, 2, 4, 8, 16, 32}));
}
