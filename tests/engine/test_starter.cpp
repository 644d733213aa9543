// The starter preset and corpus (issue 21): "Train a small model now" trains a model small
// enough for about two minutes on a 2-core CPU, with the training settings its preset file
// carries, on a slice of TinyStories that ships with its licence. A preset's settings are
// read through the settings' declarations, so a bad one is refused with the file, the
// setting and the range to use.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hsm/params.h"
#include "hsm/presets.h"
#include "hsm/receptive_field.h"
#include "hsm/run_folder.h"
#include "hsm/settings.h"

using namespace hsm;
namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A resources folder of one preset, `name`, whose file is `json`; HSM_RESOURCES points at it
// while the object lives.
struct OnePresetResources {
  OnePresetResources(const std::string& name, const std::string& json) {
    dir = fs::path(::testing::TempDir()) / ("presets-" + name);
    fs::create_directories(dir / "presets");
    std::ofstream(dir / "presets" / "index.json") << "[\"" << name << "\"]";
    std::ofstream(dir / "presets" / (name + ".json")) << json;
    ::setenv("HSM_RESOURCES", dir.c_str(), 1);
  }
  ~OnePresetResources() { ::unsetenv("HSM_RESOURCES"); }
  fs::path dir;
};

std::string preset_with_training(const std::string& training) {
  return R"({"name": "p", "vocab_size": 64, "d_model": 16, "context": 16,
             "layers": [{"mixer": "hsm_ab", "ffn": 32, "heads": 1}], "training": )" +
         training + "}";
}

std::string refusal(const std::string& training) {
  OnePresetResources resources("p", preset_with_training(training));
  try {
    preset_train_settings("p");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Starter, IsSevenShiftLayersOfTwelveHundredThousandParametersReachingTheWholeContext) {
  const ModelConfig c = load_preset(kStarterPreset);
  EXPECT_EQ(c.name, "starter");
  ASSERT_EQ(c.layers.size(), 7u);
  for (const LayerSpec& l : c.layers) EXPECT_EQ(l, (LayerSpec{"hsm_ab", 512, 1}));
  EXPECT_EQ(c.d_model, 128);
  EXPECT_EQ(c.vocab_size, 2000);
  EXPECT_EQ(c.context, 128);
  // 7 × (a, b + FFN 2·128·512 + 512 + 128 + norms 4·128) + embeddings 2000·128 + positions
  // 128·128 + the final norm 2·128 (the output layer is the embedding's transpose).
  EXPECT_EQ(count_params(c).total(), 7 * (2 + 2 * 128 * 512 + 512 + 128 + 4 * 128) + 2000 * 128 + 128 * 128 + 2 * 128);
  // Shifts 1, 2, ..., 64: the last layer reaches every one of the 128 positions.
  EXPECT_EQ(receptive_field(c).coverage(6), 128);
}

TEST(Starter, CarriesItsOwnTrainingSettingsOverThePapersDefaults) {
  const TrainSettings s = preset_train_settings(kStarterPreset);
  EXPECT_EQ(s.steps, 600);
  EXPECT_EQ(s.batch_size, 16);
  EXPECT_DOUBLE_EQ(s.lr, 0.003);
  EXPECT_EQ(s.warmup_steps, 30);
  EXPECT_TRUE(s.cosine);
  EXPECT_EQ(s.eval_every, 50);
  EXPECT_EQ(s.checkpoint_every, 100);
  // What the file does not set stays the paper's default.
  const TrainSettings paper;
  EXPECT_DOUBLE_EQ(s.weight_decay, paper.weight_decay);
  EXPECT_EQ(s.seed, paper.seed);
  EXPECT_EQ(s.device, paper.device);
  // Only settings the Training view has a field for: the studio's run is the CLI's run.
  const std::string file = read_file(fs::path(resources_dir()) / "presets" / "starter.json");
  for (const char* hidden : {"min_lr", "eval_batches", "log_every", "beta1", "beta2", "eps", "bf16"})
    EXPECT_EQ(file.find(std::string("\"") + hidden + "\""), std::string::npos) << hidden;
}

TEST(Starter, APaperPresetCarriesNoSettingsOfItsOwn) {
  const TrainSettings s = preset_train_settings("hsm_ab");
  for (const SettingSpec& spec : train_setting_specs()) EXPECT_EQ(spec.get(s), spec.get(TrainSettings{})) << spec.key;
  EXPECT_THROW(preset_train_settings("no_such_preset"), std::invalid_argument);
}

TEST(Starter, APresetsSettingsAreCheckedByTheirDeclarations) {
  {
    OnePresetResources resources("p", preset_with_training(R"({"batch_size": 4, "cosine": true, "windows": "story_start"})"));
    const TrainSettings s = preset_train_settings("p");
    EXPECT_EQ(s.batch_size, 4);
    EXPECT_TRUE(s.cosine);
    EXPECT_EQ(s.windows, "story_start");
    EXPECT_EQ(load_preset("p").layers.size(), 1u);  // the model reads past "training"
  }
  const std::string out_of_range = refusal(R"({"batch_size": 0})");
  EXPECT_NE(out_of_range.find("p.json: training.batch_size"), std::string::npos) << out_of_range;
  EXPECT_NE(out_of_range.find("use 1 to"), std::string::npos) << out_of_range;
  const std::string unknown = refusal(R"({"batch": 16})");
  EXPECT_NE(unknown.find("training.batch:"), std::string::npos) << unknown;
  EXPECT_NE(refusal(R"({"lr": [0.1]})").find("expected a number"), std::string::npos);
  EXPECT_NE(refusal(R"({"windows": "sideways"})").find("training.windows"), std::string::npos);
  EXPECT_NE(refusal(R"({"lr": 0.001, "min_lr": 0.01, "cosine": true})").find("p.json: training: "), std::string::npos);
  EXPECT_THROW(
      {
        OnePresetResources resources("p", preset_with_training("16"));
        load_preset("p");
      },
      ConfigError);
}

TEST(Starter, TheCorpusIsWholeTinyStoriesUnderTwoMegabytesWithItsLicenceAndNotice) {
  const std::string path = starter_corpus();
  ASSERT_FALSE(path.empty()) << "resources/corpus/tinystories-starter.txt is missing";
  const std::string text = read_file(path);
  EXPECT_LE(text.size(), 2'000'000u);
  EXPECT_GT(text.size(), 1'000'000u);
  const std::string separator = "<|endoftext|>\n";
  ASSERT_GE(text.size(), separator.size());
  EXPECT_EQ(text.substr(text.size() - separator.size()), separator) << "the last story is cut";
  size_t stories = 0;
  for (size_t at = text.find(separator); at != std::string::npos; at = text.find(separator, at + 1)) ++stories;
  EXPECT_EQ(stories, 1728u);
  const fs::path dir = fs::path(path).parent_path();
  const std::string licence = read_file(dir / "CDLA-Sharing-1.0.txt");
  EXPECT_EQ(licence.rfind("Community Data License Agreement - Sharing - Version 1.0", 0), 0u);
  const std::string readme = read_file(dir / "README.md");
  for (const char* needed : {"Ronen Eldan and Yuanzhi Li", "CDLA-Sharing-1.0", "Notice of change", "has been changed"})
    EXPECT_NE(readme.find(needed), std::string::npos) << needed;
}

namespace {

// A copy of the bundled resources' presets, starter corpus and hsm_ab model whose config.json
// names a corpus that is not on this machine (as on every machine but the one that trained it);
// HSM_RESOURCES points at it while the object lives.
// `name`: the folder's, one per test (ctest runs the tests of this file side by side).
struct ResourcesElsewhere {
  explicit ResourcesElsewhere(const std::string& name) {
    const fs::path source = resources_dir();  // the source tree's (or $HSM_RESOURCES's)
    dir = fs::path(::testing::TempDir()) / name;
    fs::remove_all(dir);
    fs::create_directories(dir / "corpus");
    fs::create_directories(dir / "models" / "hsm_ab");
    fs::copy(source / "presets", dir / "presets", fs::copy_options::recursive);
    fs::copy(source / "corpus" / "tinystories-starter.txt", dir / "corpus" / "tinystories-starter.txt");
    std::string config = read_file(source / "models" / "hsm_ab" / "config.json");
    const std::string recorded = nlohmann::json::parse(config)["data"]["path"].get<std::string>();
    config.replace(config.find(recorded), recorded.size(), missing);
    std::ofstream(dir / "models" / "hsm_ab" / "config.json") << config;
    ::setenv("HSM_RESOURCES", dir.c_str(), 1);
  }
  ~ResourcesElsewhere() { ::unsetenv("HSM_RESOURCES"); }
  fs::path dir;
  const std::string missing = "/nonexistent/machine-that-trained-it/tinystories-sample.txt";
};

}  // namespace

// Only a folder below <resources>/models/ is a bundled model: not models/ itself, not a
// sibling whose name begins the same, not a run elsewhere.
TEST(BundledModels, AreTheFoldersBelowTheResourcesModelsFolder) {
  ResourcesElsewhere resources("resources-elsewhere-folders");
  EXPECT_TRUE(is_bundled_model((resources.dir / "models" / "hsm_ab").string()));
  EXPECT_TRUE(is_bundled_model((resources.dir / "models" / "hsm_ab" / ".." / "hsm_ab").string()));
  EXPECT_FALSE(is_bundled_model((resources.dir / "models").string()));
  fs::create_directories(resources.dir / "models2" / "hsm_ab");
  EXPECT_FALSE(is_bundled_model((resources.dir / "models2" / "hsm_ab").string()));
  EXPECT_FALSE(is_bundled_model(::testing::TempDir()));
}

// `hsm eval`, Losses and Probe's ablation score a run on its own corpus; a bundled model's
// corpus is the training machine's, so where it is missing the starter corpus stands in and
// says what it replaces. A run of the user's own whose corpus is missing is not silently
// scored on another corpus.
TEST(BundledModels, AreScoredOnTheStarterCorpusWhereTheirOwnIsMissing) {
  ResourcesElsewhere resources("resources-elsewhere-scored");
  const std::string bundled = (resources.dir / "models" / "hsm_ab").string();
  const ScoringCorpus corpus = scoring_corpus(bundled);
  EXPECT_EQ(corpus.path, (resources.dir / "corpus" / "tinystories-starter.txt").string());
  EXPECT_EQ(corpus.instead_of, resources.missing);

  // Present: its own, nothing stands in.
  const std::string present = (resources.dir / "corpus" / "tinystories-starter.txt").string();
  const ScoringCorpus own = scoring_corpus(bundled, present);
  EXPECT_EQ(own.path, present);
  EXPECT_TRUE(own.instead_of.empty());

  // A user's copy of the same folder: its recorded corpus, missing as it is.
  const fs::path copy = resources.dir.parent_path() / "users-copy-of-hsm_ab-scored";
  fs::remove_all(copy);
  fs::copy(resources.dir / "models" / "hsm_ab", copy, fs::copy_options::recursive);
  const ScoringCorpus users = scoring_corpus(copy.string());
  EXPECT_EQ(users.path, resources.missing);
  EXPECT_TRUE(users.instead_of.empty());

  // No starter corpus installed: the recorded path, for the caller to say it is missing.
  fs::remove(resources.dir / "corpus" / "tinystories-starter.txt");
  const ScoringCorpus none = scoring_corpus(bundled);
  EXPECT_EQ(none.path, resources.missing);
  EXPECT_TRUE(none.instead_of.empty());
}
