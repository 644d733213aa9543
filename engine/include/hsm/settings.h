#pragma once
// Every training setting declared once, with its range and help text (STYLE: "a setting is
// declared once, and the CLI flag, the form field and the engine's check are made from that
// declaration"). `hsm train` makes its flags from this table, the studio's Training view reads
// its fields through it, and the trainer checks a TrainSettings with it before anything runs,
// so a value refused in one place is refused in all three with the same words.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "hsm/train_settings.h"

namespace hsm {

// A setting that cannot be used: the message names the setting (its flag and its field) and
// the range to use, e.g. "--weight-decay (weight_decay): nan is not a number; use 0 to 1".
struct SettingError : std::invalid_argument {
  SettingError(std::string key, const std::string& flag, std::string problem)
      : std::invalid_argument(flag + " (" + key + "): " + problem), key(std::move(key)), problem(std::move(problem)) {}
  std::string key;      // the field the message is about ("weight_decay")
  std::string problem;  // the message without the setting's name, for a form that shows it beside the field
};

struct SettingSpec {
  enum class Kind {
    kInteger,  // whole number in [min, max]
    kReal,     // finite number in [min, max] ((min, max] when min_exclusive)
    kSwitch,   // on/off: a CLI flag without value, a check box
    kBool,     // true/false: a CLI option with a value
    kChoice,   // one of choices
    kText,     // text: any, or what `accepts` takes (the device)
  };
  using Field = std::variant<int64_t TrainSettings::*, int TrainSettings::*, uint64_t TrainSettings::*,
                             double TrainSettings::*, bool TrainSettings::*, std::string TrainSettings::*>;
  const char* key;    // the TrainSettings field and config.json's name ("batch_size")
  const char* flag;   // the CLI flag ("--batch")
  const char* label;  // the form's label ("Batch size")
  const char* help;   // one line, with the paper's value where it has one
  Kind kind;
  Field field;
  double min = 0, max = 0;
  bool min_exclusive = false;
  std::vector<std::string> choices;
  // kText: the values it takes (nullptr: any text), what a refused one is not ("a device") and
  // what to use instead ("use cpu, cuda, cuda:N or auto").
  bool (*accepts)(const std::string&) = nullptr;
  const char* accepts_what = nullptr;
  const char* accepts_range = nullptr;

  // The setting's value as text ("256", "0.002", "true").
  std::string get(const TrainSettings& s) const;
  // Parses `text` and stores it; throws SettingError for text that is not such a value or is
  // out of range.
  void set(TrainSettings& s, const std::string& text) const;
  // What to use, in words ("use 1 to 65536").
  std::string range_text() const;
};

// All of them, in the order the CLI's help and the studio's form show them.
const std::vector<SettingSpec>& train_setting_specs();
// One by key; throws std::invalid_argument for an unknown key.
const SettingSpec& train_setting(const std::string& key);

// Checks every setting (finite, in range) and how they go together (min_lr <= lr, steps or
// epochs); throws SettingError naming the first bad one. The trainer calls it before it
// creates anything.
void validate_train_settings(const TrainSettings& s);

}  // namespace hsm
