#include "hsm/train_until_stopped.h"

#include <chrono>
#include <thread>

namespace hsm {

TrainSummary train_until_stopped(Trainer& trainer, const std::atomic<bool>* stop_requested) {
  std::atomic<bool> finished{false};
  std::thread watcher([&] {
    while (!finished) {
      if (stop_requested && *stop_requested) {
        trainer.stop();
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  struct JoinOnExit {  // the watcher ends on every way out of run(), an exception included
    std::atomic<bool>& finished;
    std::thread& watcher;
    ~JoinOnExit() {
      finished = true;
      watcher.join();
    }
  } join{finished, watcher};
  return trainer.run();
}

}  // namespace hsm
