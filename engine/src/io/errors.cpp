#include "hsm/errors.h"

#include <new>
#include <system_error>

namespace hsm {
namespace {

// Drops a leading "[...] " tag.
std::string without_tag(std::string s) {
  if (!s.empty() && s[0] == '[') {
    const size_t end = s.find("] ");
    if (end != std::string::npos) s.erase(0, end + 2);
  }
  return s;
}

const char* const kOutOfMemory =
    "out of memory: this needs more memory than the process may use (the machine's, or a limit such as ulimit -v); "
    "use a smaller --batch or a smaller model, or raise the limit";

}  // namespace

std::string error_text(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e)) return kOutOfMemory;
  // A thread that cannot get its stack (pthread_create: EAGAIN) under an address-space limit
  // said only "Resource temporarily unavailable" (issue 46).
  if (const auto* se = dynamic_cast<const std::system_error*>(&e);
      se && se->code() == std::errc::resource_unavailable_try_again)
    return std::string("out of memory or processes: a worker thread could not be started (") + se->what() +
           "); raise the memory limit (ulimit -v) or the process limit (ulimit -u), or use fewer --threads";
  std::string s = e.what();
  const size_t nl = s.find('\n');
  if (nl != std::string::npos) s.erase(nl);
  if (s.find("can't allocate memory") != std::string::npos) {
    // "DefaultCPUAllocator: can't allocate memory: you tried to allocate 12000000000000 bytes. ..."
    const size_t at = s.find("allocate ", s.find("tried to"));
    std::string size;
    if (at != std::string::npos) {
      const size_t from = at + 9, to = s.find(' ', from);
      const std::string bytes = s.substr(from, to == std::string::npos ? std::string::npos : to - from);
      if (!bytes.empty() && bytes.find_first_not_of("0123456789") == std::string::npos)
        size = " (it asked for " + std::to_string(std::stoull(bytes) >> 20) + " MiB at once)";
    }
    return kOutOfMemory + size;
  }
  return without_tag(s);
}

std::string json_error_text(const std::string& what) {
  std::string s = without_tag(what);
  if (s.rfind("parse error at ", 0) == 0) s.erase(0, 15);
  const size_t syntax = s.find("syntax error while parsing ");
  if (syntax != std::string::npos) {
    const size_t dash = s.find(" - ", syntax);
    if (dash != std::string::npos) s.erase(syntax, dash + 3 - syntax);
  }
  // "; last read: '<bytes>'" quotes the input, which may be binary: not for a message.
  const size_t quoted = s.find("; last read: '");
  if (quoted != std::string::npos) {
    const size_t end = s.find("'", quoted + 14);
    s.erase(quoted, end == std::string::npos ? std::string::npos : end + 1 - quoted);
  }
  return s;
}

}  // namespace hsm
