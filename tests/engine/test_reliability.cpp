// Nothing lost, nothing silent (issue 19): checkpoints are whole units and resume finds the
// newest whole one; a diverging run keeps a finite checkpoint and says what to change; one
// trainer per run folder; a swapped tokenizer is refused; every training setting is checked
// once, by its declaration; a new run that fails leaves no half-made folder.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "hsm/corpus.h"
#include "hsm/evaluator.h"
#include "hsm/export.h"
#include "hsm/generator.h"
#include "hsm/model.h"
#include "hsm/prober.h"
#include "hsm/safetensors.h"
#include "hsm/settings.h"
#include "hsm/trainer.h"
#include "io/io_util.h"
#include "hsm/run_folder.h"
#include "training_test_util.h"

using namespace hsm;
using namespace hsm::test;
namespace fs = std::filesystem;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The weights of a run's newest checkpoint, as raw F32 bytes per tensor.
std::map<std::string, std::string> weights_of(const std::string& file) {
  std::map<std::string, std::string> out;
  for (const TensorBlob& b : read_safetensors(file).tensors) out[b.name] = b.data;
  return out;
}

}  // namespace

// ---- checkpoints ------------------------------------------------------------------------------

// What a kill in the middle of a checkpoint leaves (an unpublished folder, temporaries, top-level
// files a step behind the newest checkpoint) is cleaned up, and resume takes the newest whole
// checkpoint, reaching the weights of a run that was never interrupted.
TEST(Checkpoints, ResumeTakesTheNewestWholeCheckpointWhateverAKillLeft) {
  const std::string dir = temp_dir("ckpt-kill");
  const std::string data = make_corpus(dir);
  RunSpec straight = tiny_run(dir + "/straight", data, 40);
  straight.model.dropout = 0.1;  // the resumed run draws the same masks (seeded per step)
  Trainer(straight).run();

  RunSpec first = tiny_run(dir + "/split", data, 20);
  first.model.dropout = 0.1;
  Trainer(first).run();
  const RunFolder paths(first.run_dir);
  const auto newest = RunFolder(first.run_dir).latest_checkpoint();
  ASSERT_TRUE(newest.has_value());
  EXPECT_EQ(newest->step, 20);
  // A kill after the checkpoint of step 20 was published but before the top-level files were
  // replaced: they still describe step 10. And one in the middle of the next checkpoint.
  fs::copy_file(paths.checkpoints + "/step-000000000010/config.json", paths.config, fs::copy_options::overwrite_existing);
  fs::create_directories(paths.checkpoints + "/step-000000000030.tmp");
  std::ofstream(paths.checkpoints + "/step-000000000030.tmp/model.safetensors") << "half";
  std::ofstream(paths.weights + ".tmp") << "half";
  RunSpec second = first;
  second.resume = true;
  second.train.steps = 40;
  EXPECT_EQ(Trainer(second).run().steps, 40);
  EXPECT_FALSE(fs::exists(paths.checkpoints + "/step-000000000030.tmp"));
  EXPECT_FALSE(fs::exists(paths.weights + ".tmp"));
  EXPECT_EQ(weights_of(paths.weights), weights_of(RunFolder(straight.run_dir).weights))
      << "the resumed run ends on the uninterrupted run's weights, bit for bit";
}

// A run written before step folders (optimizer.safetensors at the top) still resumes, and its
// first new checkpoint moves it to the new layout.
TEST(Checkpoints, ARunOfTheOldLayoutResumes) {
  const std::string dir = temp_dir("ckpt-legacy");
  RunSpec spec = tiny_run(dir, make_corpus(dir), 10);
  Trainer(spec).run();
  const RunFolder paths(spec.run_dir);
  const RunFolder::Checkpoint c = *RunFolder(spec.run_dir).latest_checkpoint();
  fs::copy_file(c.optimizer, paths.optimizer);
  fs::remove_all(paths.checkpoints);
  RunSpec more = spec;
  more.resume = true;
  more.train.steps = 20;
  EXPECT_EQ(Trainer(more).run().steps, 20);
  EXPECT_EQ(RunFolder(spec.run_dir).latest_checkpoint()->step, 20);
  EXPECT_FALSE(fs::exists(paths.optimizer));
}

// ---- divergence -------------------------------------------------------------------------------

// A learning rate with a weight decay of 1 flips and grows every weight by -9 per step until it
// overflows: training stops at the first non-finite loss, the run folder keeps the last finite
// checkpoint (loadable, finite), the message names the step and the change to make, and
// resuming with a sane rate trains on.
TEST(Divergence, TheLastFiniteCheckpointIsKeptAndTheMessageSaysWhatToChange) {
  const std::string dir = temp_dir("diverge");
  RunSpec spec = tiny_run(dir, make_corpus(dir), 200);
  spec.train.lr = 10;
  spec.train.weight_decay = 1;
  spec.train.checkpoint_every = 5;
  const std::string message = error_of([&] { Trainer(spec).run(); });
  EXPECT_TRUE(has(message, "training diverged at step")) << message;
  EXPECT_TRUE(has(message, "keeps the checkpoint of step")) << message;
  EXPECT_TRUE(has(message, "--lr 1 (it was 10)")) << message;
  const auto kept = RunFolder(spec.run_dir).latest_checkpoint();
  ASSERT_TRUE(kept.has_value());
  EXPECT_TRUE(has(message, "step " + std::to_string(kept->step) + ",")) << message;
  auto model = Model::load(spec.run_dir, "cpu");  // finite weights: loads
  EXPECT_FALSE(Generator(model).run("Once", GenerateOptions{}).tokens.empty());

  RunSpec sane = spec;
  sane.resume = true;
  sane.train.lr = 0.003;
  sane.train.weight_decay = 0.01;
  sane.train.steps = kept->step + 10;
  EXPECT_EQ(Trainer(sane).run().steps, kept->step + 10);
}

// Weights that are not finite are refused by every reader, with the reason, instead of
// evaluating to "loss": null or generating garbage.
TEST(Divergence, NonFiniteWeightsAreRefusedOnLoad) {
  const std::string dir = temp_dir("nan-weights");
  RunSpec spec = tiny_run(dir, make_corpus(dir), 5);
  Trainer(spec).run();
  const RunFolder paths(spec.run_dir);
  SafetensorsFile file = read_safetensors(paths.weights);
  for (TensorBlob& b : file.tensors)
    if (b.name == "blocks.1.ffn.fc1.weight") {
      const float nan = std::nanf("");
      std::memcpy(b.data.data() + 4 * 7, &nan, 4);
    }
  fs::remove(paths.weights);  // a link to the checkpoint's file: write a file of its own
  write_safetensors(paths.weights, file.tensors, file.metadata);
  const std::string message = error_of([&] { Model::load(spec.run_dir, "cpu"); });
  EXPECT_TRUE(has(message, "'blocks.1.ffn.fc1.weight' holds NaN or infinite values")) << message;
  EXPECT_TRUE(has(message, "diverged")) << message;
  ExportOptions options;
  EXPECT_TRUE(has(error_of([&] { export_run(spec.run_dir, dir + "/exported", options); }), "NaN")) << "export too";
}

// ---- one trainer per folder -------------------------------------------------------------------

// While a run trains, a second trainer of its folder (a resume, or a fresh start into it) is
// refused at once with the holder's PID, and the first one's curve is whole. Readers are not
// blocked. A lock dies with its process: after the first trainer ends, resume works.
TEST(RunLockTest, ASecondTrainerIsRefusedWithTheHoldersPid) {
  const std::string dir = temp_dir("lock");
  const std::string data = make_corpus(dir);
  RunSpec spec = tiny_run(dir, data, 60);
  std::atomic<bool> at_step_10{false}, tried{false};
  std::string second_error;
  TrainCallbacks cb;
  cb.on_metric = [&](const MetricRecord& m) {
    if (m.kind != "train" || m.step != 10) return;
    at_step_10 = true;
    while (!tried) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  };
  std::thread first([&] { Trainer(spec, cb).run(); });
  while (!at_step_10) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  RunSpec second = spec;
  second.resume = true;
  second_error = error_of([&] { Trainer(second).run(); });
  EXPECT_NO_THROW(read_run_info(spec.run_dir)) << "readers are not blocked";
  tried = true;
  first.join();
  EXPECT_TRUE(has(second_error, "is being trained by pid " + std::to_string(::getpid()))) << second_error;
  std::vector<int64_t> steps;
  for (const auto& m : read_metrics_json(spec.run_dir))
    if (m["kind"] == "train") steps.push_back(m["step"]);
  ASSERT_EQ(steps.size(), 12u);
  for (size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(steps[i], 5 * static_cast<int64_t>(i + 1));
  second.train.steps = 70;
  EXPECT_EQ(Trainer(second).run().steps, 70);

  // Another process holding the lock: refused as well; once it is gone, the lock is free.
  const pid_t child = ::fork();
  if (child == 0) {
    RunLock held(spec.run_dir);
    ::pause();
    ::_exit(0);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(has(error_of([&] { RunLock again(spec.run_dir); }), "pid " + std::to_string(child)));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_NO_THROW(RunLock(spec.run_dir));
}

// ---- tokenizer --------------------------------------------------------------------------------

// Another run's tokenizer.model in a run folder (the same vocabulary size) is refused by every
// load (model, resume, export) with what differs; the hash recorded is never overwritten.
TEST(Tokenizer, ASwappedTokenizerIsRefusedAtEveryLoad) {
  const std::string dir = temp_dir("swap");
  const std::string data = make_corpus(dir);
  RunSpec a = tiny_run(dir + "/a", data, 5);
  Trainer(a).run();
  std::string other = read_text_file(data, "corpus");
  for (size_t at; (at = other.find("Lily")) != std::string::npos;) other.replace(at, 4, "Anna");
  for (size_t at; (at = other.find("cake")) != std::string::npos;) other.replace(at, 4, "kite");
  std::ofstream(dir + "/other.txt") << other;
  RunSpec b = tiny_run(dir + "/b", dir + "/other.txt", 5);
  Trainer(b).run();
  fs::copy_file(b.run_dir + "/tokenizer.model", a.run_dir + "/tokenizer.model", fs::copy_options::overwrite_existing);
  const std::string recorded = read_text_file(a.run_dir + "/config.json", "config");
  const std::string message = error_of([&] { Model::load(a.run_dir, "cpu"); });
  EXPECT_TRUE(has(message, "is not the tokenizer this model was trained with")) << message;
  EXPECT_TRUE(has(message, "Put the run's own tokenizer.model back")) << message;
  RunSpec resume = a;
  resume.resume = true;
  resume.train.steps = 10;
  EXPECT_TRUE(has(error_of([&] { Trainer(resume).run(); }), "is not the tokenizer"));
  ExportOptions options;
  EXPECT_TRUE(has(error_of([&] { export_run(a.run_dir, dir + "/exported", options); }), "is not the tokenizer"));
  EXPECT_EQ(read_text_file(a.run_dir + "/config.json", "config"), recorded) << "nothing was overwritten";
}

// ---- settings ---------------------------------------------------------------------------------

// Each setting is checked by its declaration: finite, in range, named with its flag and field,
// with the range to use; NaN settings (which were saved as null and made a run unresumable)
// and settings that do not go together are refused before anything is created.
TEST(Settings, EverySettingIsCheckedByItsDeclaration) {
  auto refused = [](const char* key, const std::string& text) {
    TrainSettings s;
    return error_of([&] { train_setting(key).set(s, text); });
  };
  EXPECT_EQ(refused("weight_decay", "nan"), "--weight-decay (weight_decay): 'nan' is not a number; use 0 to 1");
  EXPECT_EQ(refused("grad_clip", "inf"), "--grad-clip (grad_clip): 'inf' is not a number; use 0 to 1000000");
  EXPECT_EQ(refused("threads", "-4"), "--threads (threads): -4 is out of range; use 0 to 1024");
  EXPECT_EQ(refused("batch_size", "12x"), "--batch (batch_size): '12x' is not a whole number; use 1 to 65536");
  EXPECT_EQ(refused("lr", "0"), "--lr (lr): 0 is out of range; use a number above 0, at most 10");
  EXPECT_EQ(refused("windows", "stories"), "--windows (windows): 'stories' is not one of them; use packed or story_start");
  EXPECT_EQ(refused("device", "gpu"), "--device (device): 'gpu' is not a device; use cpu, cuda, cuda:N or auto");
  TrainSettings s;
  train_setting("batch_size").set(s, "32");
  EXPECT_EQ(s.batch_size, 32);
  EXPECT_EQ(train_setting("lr").get(s), "0.002");
  // Typed values are checked too, and how they go together.
  s.weight_decay = NAN;
  EXPECT_TRUE(has(error_of([&] { validate_train_settings(s); }), "--weight-decay (weight_decay): 'nan'"));
  s = TrainSettings{};
  s.cosine = true;
  s.min_lr = 5;
  EXPECT_TRUE(has(error_of([&] { validate_train_settings(s); }), "is above the learning rate"));
  s = TrainSettings{};
  EXPECT_NO_THROW(validate_train_settings(s));
  // Every declaration's default is in its own range, and keys and flags are unique.
  std::set<std::string> keys, flags;
  for (const SettingSpec& spec : train_setting_specs()) {
    EXPECT_NO_THROW(spec.set(s, spec.get(TrainSettings{}))) << spec.key;
    EXPECT_TRUE(keys.insert(spec.key).second) << spec.key;
    EXPECT_TRUE(flags.insert(spec.flag).second) << spec.flag;
  }
}

TEST(Settings, TheTrainerRefusesBadSettingsBeforeCreatingAnything) {
  const std::string dir = temp_dir("settings");
  RunSpec spec = tiny_run(dir, make_corpus(dir), 5);
  spec.train.grad_clip = NAN;
  EXPECT_THROW(Trainer(spec).run(), SettingError);
  EXPECT_FALSE(fs::exists(spec.run_dir));
}

// Resuming with fewer steps than the run has is refused with the numbers (it printed
// "300/100 ... -9223372036854775808 tok/s" before).
TEST(Settings, ResumingToFewerStepsThanTheRunHasIsRefused) {
  const std::string dir = temp_dir("fewer");
  RunSpec spec = tiny_run(dir, make_corpus(dir), 20);
  Trainer(spec).run();
  spec.resume = true;
  spec.train.steps = 10;
  const std::string message = error_of([&] { Trainer(spec).run(); });
  EXPECT_TRUE(has(message, "the run is at step 20 and is set to 10 steps")) << message;
}

// ---- failed starts ----------------------------------------------------------------------------

// A new run that fails before its first checkpoint (here: a corpus of stories too short for
// the context) leaves no half-made run folder: the folder goes if the trainer made it, and an
// empty folder the user gave stays empty.
TEST(FailedStart, LeavesNoHalfMadeRunFolder) {
  const std::string dir = temp_dir("failed-start");
  const std::string data = make_corpus(dir);
  RunSpec ok = tiny_run(dir + "/ok", data, 2);
  Trainer(ok).run();
  std::ofstream(dir + "/short.txt") << "Hi.\n<|endoftext|>\nBye.\n<|endoftext|>\n";
  RunSpec bad = tiny_run(dir + "/new", dir + "/short.txt", 5);
  bad.tokenizer_path = ok.run_dir + "/tokenizer.model";
  EXPECT_THROW(Trainer(bad).run(), CorpusError);
  EXPECT_FALSE(fs::exists(bad.run_dir));
  fs::create_directories(dir + "/given");
  bad.run_dir = dir + "/given";
  EXPECT_THROW(Trainer(bad).run(), CorpusError);
  ASSERT_TRUE(fs::exists(bad.run_dir));
  EXPECT_TRUE(fs::is_empty(bad.run_dir));
}

// Temporaries `<name>.tmp.<pid>` of a process that is gone (a kill during a corpus-sized cache
// write) are removed; a live process's are kept.
TEST(FailedStart, TemporariesOfDeadWritersAreRemoved) {
  const std::string dir = temp_dir("dead-tmp");
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  std::ofstream(dir + "/tokens-1.bin.tmp." + std::to_string(child)) << "half";
  std::ofstream(dir + "/tokens-2.bin.tmp." + std::to_string(::getpid())) << "being written";
  std::ofstream(dir + "/tokens-3.bin") << "a cache";
  EXPECT_EQ(remove_dead_temporaries(dir), 1);
  EXPECT_FALSE(fs::exists(dir + "/tokens-1.bin.tmp." + std::to_string(child)));
  EXPECT_TRUE(fs::exists(dir + "/tokens-2.bin.tmp." + std::to_string(::getpid())));
  EXPECT_TRUE(fs::exists(dir + "/tokens-3.bin"));
}
