#pragma once
// Progress and cancellation for long engine work (tokenizer training, corpus encoding,
// training). Plain C++ so the app and the CLI can pass their own.
#include <atomic>
#include <functional>
#include <string>

namespace hsm {

// stage: a short human label ("reading corpus", "training tokenizer", ...);
// fraction: 0..1, or a negative value when the amount of work is not known.
using ProgressFn = std::function<void(const std::string& stage, double fraction)>;

// Thrown when a CancelFlag was raised while work was under way.
struct Cancelled : std::exception {
  const char* what() const noexcept override { return "cancelled"; }
};

// Shared between the thread doing the work and the one that wants it to stop.
using CancelFlag = std::atomic<bool>;

}  // namespace hsm
