#include "gui/engine/thread_priority.h"

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace studio {

bool lower_current_thread_priority() {
#if defined(__linux__)
  // On Linux the nice value belongs to the thread (setpriority on its tid), not the process.
  const auto tid = static_cast<id_t>(::syscall(SYS_gettid));
  const int current = ::getpriority(PRIO_PROCESS, tid);
  return ::setpriority(PRIO_PROCESS, tid, current + 5) == 0;
#else
  return false;
#endif
}

}  // namespace studio
