#pragma once
// What the CLI suites that train (test_faults, test_distributed) share: a shell command's
// result, a file's text, and their inputs (stories from a small grammar, a tiny model).
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

struct Result {
  int exit_code = -1;  // -1: killed by a signal (signal says which)
  int signal = 0;
  std::string out;
};

// Runs a shell command line, its output (stdout and stderr) captured.
inline Result shell(const std::string& line) {
  Result r;
  FILE* pipe = ::popen((line + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  const int status = ::pclose(pipe);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
    // A shell reports its child killed by signal s as exit code 128 + s.
    if (r.exit_code > 128) r.signal = r.exit_code - 128, r.exit_code = -1;
  }
  return r;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// dir/stories.txt (250 stories) and dir/tiny.json (hsm_ab + attention, d 32, context 32).
inline void write_tiny_run_inputs(const std::string& dir, unsigned seed, double dropout) {
  std::mt19937 rng(seed);
  const char* names[] = {"Lily", "Tom", "Ben", "Mia"};
  const char* things[] = {"ball", "cat", "dog", "tree", "cake"};
  std::ofstream corpus(dir + "/stories.txt");
  for (int s = 0; s < 250; ++s) {
    const char* n = names[rng() % 4];
    for (int k = 0; k < 4; ++k) corpus << "Once upon a time, " << n << " saw a " << things[rng() % 5] << ". ";
    corpus << "The end.\n<|endoftext|>\n";
  }
  std::ofstream(dir + "/tiny.json") << R"({"name": "tiny", "vocab_size": 300, "d_model": 32, "context": 32, "dropout": )"
                                    << dropout << R"(, "layers": [{"mixer": "hsm_ab", "ffn": 64, "heads": 1},
      {"mixer": "attn", "ffn": 64, "heads": 4}]})";
}
