#pragma once
// Runs a Trainer while a flag set elsewhere asks it to stop: a signal handler's (hsm train, a
// sweep's point), a cancel request (the lab's workers). The flag is polled on a thread of its
// own and turned into Trainer::stop(): the step ends, a checkpoint is written, run() returns
// with `stopped` set. Plain C++ (no LibTorch), like hsm/trainer.h.
#include <atomic>

#include "hsm/trainer.h"

namespace hsm {

// Trainer::run(), stopped when *stop_requested turns true (polled every 50 ms; null: never).
// An exception from run() is rethrown after the polling thread has ended.
TrainSummary train_until_stopped(Trainer& trainer, const std::atomic<bool>* stop_requested);

}  // namespace hsm
