// Encoding a corpus into a split token dataset (hsm/dataset.h): documents are read in
// order, encoded in parallel batches, filtered by length and assigned to a split by a
// seeded hash of their index, so the result is independent of the thread count.
#include "hsm/dataset.h"

#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "data/corpus_files.h"
#include "data/token_cache.h"
#include "hsm/corpus.h"
#include "hsm/tokenizer.h"
#include "io/hash_util.h"

namespace hsm {
namespace {

namespace fs = std::filesystem;

// Whether document `index` goes to validation: a function of (seed, index) only, so a
// document keeps its split whatever the context, the tokenizer or the thread count.
// A document goes to validation when its draw, uniform in [0, 1), is below val_fraction.
double split_draw(uint64_t seed, int64_t index) {
  const uint64_t h = mix64(mix64(seed) ^ static_cast<uint64_t>(index));
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

// Encodes documents on a fixed pool of worker threads, in batches, handing the results back
// in document order. The threads live as long as the encoder: each keeps its tokenizer
// word cache warm (std::async would start a fresh thread, and an empty cache, per batch).
// With one thread it encodes inline.
class BatchEncoder {
 public:
  using Sink = std::function<void(int64_t index, const std::vector<int32_t>& ids)>;
  BatchEncoder(const Tokenizer& tok, int threads, Sink sink) : tok_(tok), threads_(threads), sink_(std::move(sink)) {
    for (int i = 0; threads_ > 1 && i < threads_; ++i) workers_.emplace_back([this] { work(); });
  }
  ~BatchEncoder() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;  // after an error or a cancel, queued batches are dropped
    }
    work_cv_.notify_all();
    for (auto& w : workers_) w.join();
  }

  void add(std::string_view doc) {
    if (threads_ <= 1) {
      sink_(next_index_++, tok_.encode(std::string(doc)));
      return;
    }
    if (!batch_) batch_ = std::make_shared<Job>();
    batch_->docs.emplace_back(doc);
    batch_bytes_ += doc.size();
    if (batch_bytes_ >= kBatchBytes) submit();
  }
  // Waits for every batch and passes the last results on.
  void finish() {
    if (batch_) submit();
    while (!order_.empty()) drain_one();
  }

 private:
  static constexpr size_t kBatchBytes = 256 << 10;
  struct Job {
    int64_t first = 0;
    std::vector<std::string> docs;
    std::vector<std::vector<int32_t>> ids;
    std::exception_ptr error;
    bool done = false;
  };

  void work() {
    while (true) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (stop_) return;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        job->ids.reserve(job->docs.size());
        for (const auto& d : job->docs) job->ids.push_back(tok_.encode(d));
      } catch (...) {
        job->error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        job->done = true;
      }
      done_cv_.notify_all();
    }
  }
  void submit() {
    // At most two batches per thread in flight: bounded memory, and the workers never idle.
    while (order_.size() >= 2 * static_cast<size_t>(threads_)) drain_one();
    batch_->first = next_index_;
    next_index_ += static_cast<int64_t>(batch_->docs.size());
    order_.push_back(batch_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(batch_));
    }
    work_cv_.notify_one();
    batch_.reset();
    batch_bytes_ = 0;
  }
  void drain_one() {
    std::shared_ptr<Job> job = std::move(order_.front());
    order_.pop_front();
    {
      std::unique_lock<std::mutex> lock(mu_);
      done_cv_.wait(lock, [&] { return job->done; });
    }
    if (job->error) std::rethrow_exception(job->error);
    for (size_t i = 0; i < job->ids.size(); ++i) sink_(job->first + static_cast<int64_t>(i), job->ids[i]);
  }

  const Tokenizer& tok_;
  int threads_;
  Sink sink_;
  int64_t next_index_ = 0;
  std::shared_ptr<Job> batch_;
  size_t batch_bytes_ = 0;
  std::deque<std::shared_ptr<Job>> order_;  // submitted, in document order (this thread only)
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<std::shared_ptr<Job>> queue_;  // waiting for a worker (under mu_)
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace

std::string corpus_digest(const std::string& path, const std::string& cache_dir) {
  Fnv1a64 h;
  hash_files(h, list_files(path, cache_dir.empty() ? fs::path() : fs::absolute(cache_dir)));
  return h.hex();
}

TokenDataset load_dataset(const std::string& path, const Tokenizer& tokenizer, const DatasetOptions& options) {
  if (tokenizer.vocab_size() > 65536)
    throw std::invalid_argument("tokenizer has " + std::to_string(tokenizer.vocab_size()) +
                                " tokens; encoded corpora store ids as 16 bits, so at most 65536");
  if (options.context < 1)
    throw std::invalid_argument("context " + std::to_string(options.context) + " must be positive");
  if (!(options.val_fraction > 0.0 && options.val_fraction < 1.0))
    throw std::invalid_argument("val_fraction " + std::to_string(options.val_fraction) + " must be between 0 and 1");

  fs::path cache_dir, cache_file;
  if (!options.cache_dir.empty()) {
    cache_dir = fs::absolute(options.cache_dir);
    std::error_code ec;
    fs::create_directories(cache_dir, ec);
    if (ec)
      throw std::runtime_error("cannot create the token cache folder " + quote_path(cache_dir) + ": " + ec.message());
  }
  const std::vector<CorpusFile> files = list_files(path, cache_dir);
  TokenDataset d;
  d.cache_key = token_cache_key(tokenizer, files, options);
  if (!cache_dir.empty()) {
    cache_file = cache_dir / ("tokens-" + d.cache_key + ".bin");
    if (read_token_cache(cache_file, d.cache_key, d)) {
      if (options.progress) options.progress("loading cached tokens", 1.0);
      return d;
    }
  }

  const auto eot = static_cast<uint16_t>(tokenizer.end_of_text_id());
  // The training document whose draw came nearest to validation: a small corpus (a folder of
  // a dozen books) can draw no validation document at all, and then gives it this one.
  struct {
    double draw = 2.0;
    size_t offset = 0, length = 0;  // its tokens in d.train, <|endoftext|> included
  } nearest;
  BatchEncoder encoder(tokenizer,
                       options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency()),
                       [&](int64_t index, const std::vector<int32_t>& ids) {
                         if (static_cast<int64_t>(ids.size()) < options.context) {
                           ++d.dropped_short;
                           return;
                         }
                         const double draw = split_draw(options.seed, index);
                         const bool val = draw < options.val_fraction;
                         auto& dst = val ? d.val : d.train;
                         if (!val && draw < nearest.draw) nearest = {draw, d.train.size(), ids.size() + 1};
                         ++(val ? d.val_documents : d.train_documents);
                         dst.insert(dst.end(), ids.begin(), ids.end());
                         dst.push_back(eot);
                       });
  read_documents(
      path, files,
      [&](std::string_view doc) {
        ++d.documents;
        encoder.add(doc);
        return true;
      },
      "encoding corpus", options.progress, options.cancel);
  encoder.finish();

  if (d.val_documents == 0 && d.train_documents >= 2) {
    const auto begin = d.train.begin() + static_cast<std::ptrdiff_t>(nearest.offset);
    d.val.assign(begin, begin + static_cast<std::ptrdiff_t>(nearest.length));
    d.train.erase(begin, begin + static_cast<std::ptrdiff_t>(nearest.length));
    --d.train_documents;
    ++d.val_documents;
  }
  const std::string ctx = std::to_string(options.context);
  const int64_t kept = d.train_documents + d.val_documents;
  if (kept == 0)
    throw CorpusError("corpus '" + path + "': none of its " + std::to_string(d.documents) +
                      " document(s) has at least " + ctx + " tokens (" + std::to_string(d.dropped_short) +
                      " too short for context " + ctx + "); use a shorter context or a corpus of longer documents");
  if (d.train_documents == 0 || d.val_documents == 0)
    throw CorpusError("corpus '" + path + "': the " + std::string(d.val_documents == 0 ? "validation" : "training") +
                      " split is empty (" + std::to_string(kept) + " document(s) of at least " + ctx + " tokens, " +
                      std::to_string(d.dropped_short) + " shorter ones dropped, val_fraction " +
                      std::to_string(options.val_fraction) + "); add more documents or change val_fraction");
  if (!cache_file.empty()) write_token_cache(cache_file, d.cache_key, d);
  return d;
}

std::string default_cache_dir() {
  if (const char* d = std::getenv("HSM_CACHE_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return std::string(d) + "/hsm-studio";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/hsm-studio";
  return ".hsm-cache";
}

}  // namespace hsm
