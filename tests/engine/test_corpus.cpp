// Corpora (docs/architecture.md): every format reads to the expected documents, folders in order,
// errors name the file; datasets drop short documents, split deterministically and cache
// their tokens. All corpora are generated here.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>

#include "hsm/corpus.h"
#include "hsm/dataset.h"
#include "hsm/tokenizer.h"
#include "test_util.h"

using namespace hsm;
namespace fs = std::filesystem;

namespace {

std::string temp_dir(const std::string& name) { return hsm::test::fresh_temp_dir("hsm_corpus_", name); }

void write_file(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::vector<std::string> read_all(const std::string& path) {
  std::vector<std::string> docs;
  for_each_document(path, [&](std::string_view d) {
    docs.emplace_back(d);
    return true;
  });
  return docs;
}

// The message of the CorpusError that reading `path` throws ("" when none).
std::string corpus_error(const std::string& path) {
  try {
    read_all(path);
  } catch (const CorpusError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

using Docs = std::vector<std::string>;

}  // namespace

// ---- Formats ---------------------------------------------------------------------------

TEST(Corpus, TinyStoriesTextSplitsOnEndOfTextLines) {
  const std::string dir = temp_dir("tinystories");
  write_file(dir + "/s.txt",
             "  Story one.\nSecond line.\n\n<|endoftext|>\n"
             "Story two mentions <|endoftext|> inline.\n"
             "  <|endoftext|>  \n\n"
             "<|endoftext|>\n"  // an empty story is skipped
             "Story three\n\nhas paragraphs.");
  EXPECT_EQ(read_all(dir + "/s.txt"), (Docs{"Story one.\nSecond line.", "Story two mentions <|endoftext|> inline.",
                                            "Story three\n\nhas paragraphs."}));
}

TEST(Corpus, CrlfAndByteOrderMarkAreNormalised) {
  const std::string dir = temp_dir("crlf");
  write_file(dir + "/s.txt", "\xEF\xBB\xBFOne\r\ntwo\r\n<|endoftext|>\r\nThree\r\n");
  EXPECT_EQ(read_all(dir + "/s.txt"), (Docs{"One\ntwo", "Three"}));
}

TEST(Corpus, PlainTextFileIsOneDocument) {
  const std::string dir = temp_dir("plain");
  write_file(dir + "/book.txt", "\n\nCHAPTER I.\n\n  Once upon a time\tthere was a king.\n\nThe end.\n\n");
  EXPECT_EQ(read_all(dir + "/book.txt"), (Docs{"CHAPTER I.\n\n  Once upon a time\tthere was a king.\n\nThe end."}));
}

TEST(Corpus, JsonlReadsStoryOrTextField) {
  const std::string dir = temp_dir("jsonl");
  write_file(dir + "/d.jsonl",
             "{\"story\": \"First story.\\nWith a newline.\", \"summary\": \"x\"}\n"
             "\n"
             "{\"text\": \"Second, from text.\"}\n"
             "{\"story\": \"Story wins\", \"text\": \"not this\"}\n"
             "{\"story\": \"Emoji \xF0\x9F\x98\x80 and \\u00e9\"}");
  EXPECT_EQ(read_all(dir + "/d.jsonl"), (Docs{"First story.\nWith a newline.", "Second, from text.", "Story wins",
                                              "Emoji \xF0\x9F\x98\x80 and \xC3\xA9"}));
}

TEST(Corpus, JsonArrayIsStreamedRecordByRecord) {
  const std::string dir = temp_dir("json");
  // TinyStories' JSON files: records with nested "instruction" objects (whose keys must
  // not be mistaken for the record's fields).
  write_file(dir + "/d.json",
             "[\n"
             " {\"story\": \"One.\", \"instruction\": {\"prompt:\": \"p\", \"words\": [\"a\", \"b\"], "
             "\"story\": \"nested, ignored\"}, \"source\": \"GPT-4\"},\n"
             " {\"instruction\": {\"text\": \"nested\"}, \"text\": \"Two.\", \"n\": 3, \"ok\": true, \"z\": null},\n"
             " {\"story\": \"  Three.  \"}\n"
             "]\n");
  EXPECT_EQ(read_all(dir + "/d.json"), (Docs{"One.", "Two.", "Three."}));
}

TEST(Corpus, FolderIsReadRecursivelyInNameOrderWithoutHiddenFiles) {
  const std::string dir = temp_dir("folder");
  write_file(dir + "/b.txt", "B story");
  write_file(dir + "/a/z.txt", "A/Z one\n<|endoftext|>\nA/Z two");
  write_file(dir + "/a/y.jsonl", "{\"story\": \"A/Y\"}\n");
  write_file(dir + "/c.json", "[{\"story\": \"C\"}]");
  write_file(dir + "/.hidden.txt", "hidden file");
  write_file(dir + "/.git/objects.txt", "hidden folder");
  write_file(dir + "/empty.txt", "");  // no text: skipped, not an error inside a folder
  EXPECT_EQ(read_all(dir), (Docs{"A/Y", "A/Z one", "A/Z two", "B story", "C"}));
}

TEST(Corpus, DigestChangesWithTheFilesAndNotWithTheCacheInside) {
  const std::string dir = temp_dir("digest");
  write_file(dir + "/a.txt", "A story");
  write_file(dir + "/b/c.txt", "C story");
  const std::string first = corpus_digest(dir);
  EXPECT_EQ(corpus_digest(dir), first);  // a listing, the same while nothing changes
  write_file(dir + "/b/c.txt", "C story, longer");
  const std::string longer = corpus_digest(dir);
  EXPECT_NE(longer, first);
  write_file(dir + "/d.txt", "D story");
  const std::string added = corpus_digest(dir);
  EXPECT_NE(added, longer);
  // The token cache kept inside the corpus folder is not part of the corpus.
  write_file(dir + "/cache/tokens-1.bin", "cached");
  EXPECT_EQ(corpus_digest(dir, dir + "/cache"), added);
  EXPECT_NE(corpus_digest(dir), added);
  // A file corpus, and a missing one named.
  EXPECT_NE(corpus_digest(dir + "/a.txt"), corpus_digest(dir + "/d.txt"));
  EXPECT_THROW(corpus_digest(dir + "/missing.txt"), CorpusError);
}

TEST(Corpus, StopsWhenTheCallbackSaysSo) {
  const std::string dir = temp_dir("stop");
  write_file(dir + "/s.txt", "one\n<|endoftext|>\ntwo\n<|endoftext|>\nthree");
  write_file(dir + "/t.json", "[{\"story\": \"four\"}, {\"story\": \"five\"}]");
  for (int stop_after : {1, 2, 4}) {
    int calls = 0;
    for_each_document(dir, [&](std::string_view) { return ++calls < stop_after; });
    EXPECT_EQ(calls, stop_after);
  }
}

TEST(Corpus, LinesLongerThanTheReadBufferSurvive) {
  const std::string dir = temp_dir("longline");
  std::string line;
  std::mt19937 rng(5);
  while (line.size() < 3'500'000) line += (rng() % 7 == 0) ? "日本 " : "word ";  // multi-byte across 1 MB chunks
  line += "end";
  write_file(dir + "/long.txt", line + "\n<|endoftext|>\nshort");
  const Docs docs = read_all(dir + "/long.txt");
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0], line);
  EXPECT_EQ(docs[1], "short");
}

// ---- Errors ------------------------------------------------------------------------------

TEST(Corpus, MissingPath) {
  const std::string dir = temp_dir("missing");
  EXPECT_TRUE(contains(corpus_error(dir + "/nope.txt"), "nope.txt"));
  EXPECT_TRUE(contains(corpus_error(dir + "/nope.txt"), "does not exist"));
}

TEST(Corpus, EmptyCorpora) {
  const std::string dir = temp_dir("empty");
  write_file(dir + "/empty.txt", "");
  write_file(dir + "/blank.txt", " \n\n\t\n<|endoftext|>\n  \n");
  write_file(dir + "/empty.json", "[]");
  for (const char* name : {"empty.txt", "blank.txt", "empty.json"}) {
    const std::string msg = corpus_error(dir + "/" + name);
    EXPECT_TRUE(contains(msg, name)) << msg;
    EXPECT_TRUE(contains(msg, "empty")) << msg;
  }
  fs::create_directories(dir + "/nothing/.hidden");
  write_file(dir + "/nothing/.hidden/x.txt", "hidden");
  EXPECT_TRUE(contains(corpus_error(dir + "/nothing"), "holds no files")) << corpus_error(dir + "/nothing");
  fs::create_directories(dir + "/blanks");
  write_file(dir + "/blanks/a.txt", "\n");
  write_file(dir + "/blanks/b.txt", "");
  EXPECT_TRUE(contains(corpus_error(dir + "/blanks"), "holds no text")) << corpus_error(dir + "/blanks");
}

TEST(Corpus, BinaryFile) {
  const std::string dir = temp_dir("binary");
  write_file(dir + "/text.txt", "fine");
  write_file(dir + "/image.png", std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16));
  const std::string msg = corpus_error(dir);
  EXPECT_TRUE(contains(msg, "image.png")) << msg;
  EXPECT_TRUE(contains(msg, "binary")) << msg;
  write_file(dir + "/utf16.txt", std::string("\xFF\xFEh\0i\0", 6));
  EXPECT_TRUE(contains(corpus_error(dir + "/utf16.txt"), "UTF-16")) << corpus_error(dir + "/utf16.txt");
}

TEST(Corpus, InvalidUtf8ReportsFileAndOffset) {
  const std::string dir = temp_dir("utf8");
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"latin1.txt", "caf\xE9 au lait"},                                // offset 3: Latin-1 é
      {"overlong.txt", "ok\n<|endoftext|>\nab\xC0\x80"},                // offset 19: overlong NUL
      {"surrogate.txt", "abc\xED\xA0\x80"},                             // offset 3: UTF-16 surrogate
      {"truncated.txt", "abcdef\xE6\x97"},                              // offset 6: cut-off sequence at the end
      {"bad.jsonl", "{\"story\": \"ok\"}\n{\"story\": \"x\xFFy\"}\n"},  // offset 28
      {"bad.json", "[{\"story\": \"ok\"}, {\"story\": \"x\xFFy\"}]"},   // offset 30 (the JSON parser's message)
  };
  const std::vector<int> offsets = {3, 19, 3, 6, 28, 30};
  for (size_t i = 0; i < bad.size(); ++i) {
    write_file(dir + "/" + bad[i].first, bad[i].second);
    const std::string msg = corpus_error(dir + "/" + bad[i].first);
    EXPECT_TRUE(contains(msg, bad[i].first)) << msg;
    EXPECT_TRUE(contains(msg, "UTF-8")) << msg;
    EXPECT_TRUE(contains(msg, "offset " + std::to_string(offsets[i]))) << msg;
  }
  // Valid multi-byte text in every length passes.
  write_file(dir + "/good.txt", "\xC3\xA9 \xE6\x97\xA5 \xF0\x9F\x98\x80 \xF4\x8F\xBF\xBF \xEF\xBF\xBD");
  EXPECT_EQ(corpus_error(dir + "/good.txt"), "");
}

TEST(Corpus, JsonErrorsNameTheFileAndTheProblem) {
  const std::string dir = temp_dir("jsonerr");
  struct Case {
    std::string name, text, expect;
  };
  const std::vector<Case> cases = {
      {"nofield.json", "[{\"story\": \"ok\"}, {\"summary\": \"no story\"}]", "record 1 has no \"story\""},
      {"nofield.jsonl", "{\"story\": \"ok\"}\n{\"title\": \"x\"}\n", "line 2"},
      {"notarray.json", "{\"story\": \"x\"}", "array"},
      {"broken.json", "[{\"story\": \"x\"", "invalid JSON"},
      {"broken.jsonl", "{\"story\": \"x\"\n", "not valid JSON"},
      {"number.json", "[{\"story\": 42}]", "not a string"},
      {"number.jsonl", "{\"text\": [1]}", "not a string"},
  };
  for (const auto& c : cases) {
    write_file(dir + "/" + c.name, c.text);
    const std::string msg = corpus_error(dir + "/" + c.name);
    EXPECT_TRUE(contains(msg, c.name)) << msg;
    EXPECT_TRUE(contains(msg, c.expect)) << c.name << ": " << msg;
  }
}

// Found by fuzz/fuzz_corpus.cpp: a number too large for a double (1e999) is no parse_error
// to the JSON library but an out_of_range, which escaped the JSONL reader as a raw library error.
TEST(Corpus, JsonlNumberOutOfRangeIsAJsonError) {
  const std::string dir = temp_dir("jsonl_overflow");
  write_file(dir + "/c.jsonl", "{\"story\": \"Once.\"}\n{\"story\": \"Twice.\", \"score\": 1e999}\n");
  const std::string msg = corpus_error(dir + "/c.jsonl");
  EXPECT_TRUE(contains(msg, "c.jsonl', line 2: not valid JSON")) << msg;
  EXPECT_TRUE(contains(msg, "number overflow")) << msg;
}

TEST(Corpus, ProgressByBytesAndCancel) {
  const std::string dir = temp_dir("progress");
  std::string text;
  while (text.size() < 3'200'000) text += "A short story about a cat.\n<|endoftext|>\n";
  write_file(dir + "/big.txt", text);
  write_file(dir + "/small.jsonl", "{\"story\": \"x\"}\n");
  std::vector<double> fractions;
  int64_t docs = 0;
  for_each_document(
      dir,
      [&](std::string_view) {
        ++docs;
        return true;
      },
      [&](const std::string& stage, double f) {
        EXPECT_EQ(stage, "reading corpus");
        fractions.push_back(f);
      });
  EXPECT_EQ(docs, static_cast<int64_t>(text.size() / 41 + 1));
  ASSERT_GE(fractions.size(), 4u);   // once per MB at least
  EXPECT_LE(fractions.size(), 10u);  // but not per document
  EXPECT_TRUE(std::is_sorted(fractions.begin(), fractions.end()));
  EXPECT_DOUBLE_EQ(fractions.back(), 1.0);
  EXPECT_GT(fractions[1], 0.2);
  EXPECT_LT(fractions[1], 0.5);

  CancelFlag cancel{false};
  int64_t seen = 0;
  EXPECT_THROW(for_each_document(
                   dir,
                   [&](std::string_view) {
                     if (++seen == 100) cancel = true;
                     return true;
                   },
                   {}, &cancel),
               Cancelled);
  EXPECT_LT(seen, docs);  // stopped within about a megabyte
}

// ---- Datasets ------------------------------------------------------------------------------

namespace {

// Documents of known kinds: "short" ones of a few words and "long" ones of many.
std::vector<std::string> make_documents(int n, uint32_t seed) {
  static const char* words[] = {"the", "cat",  "dog", "ran", "to",    "a",    "big", "red",  "ball",
                                "and", "Lily", "Tom", "was", "happy", "park", "sun", "tree", "played"};
  std::mt19937 rng(seed);
  std::vector<std::string> docs;
  for (int i = 0; i < n; ++i) {
    const int len = (rng() % 3 == 0) ? 2 + static_cast<int>(rng() % 5) : 40 + static_cast<int>(rng() % 80);
    std::string d;
    for (int w = 0; w < len; ++w) d += std::string(w ? " " : "") + words[rng() % 18];
    docs.push_back(d + ".");
  }
  return docs;
}

std::string as_tinystories(const std::vector<std::string>& docs) {
  std::string s;
  for (const auto& d : docs) s += d + "\n<|endoftext|>\n";
  return s;
}

class DatasetTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string dir = temp_dir("dataset_suite");
    write_file(dir + "/train.txt", as_tinystories(make_documents(1500, 11)));
    TokenizerTrainOptions o;
    o.vocab_size = 300;
    tok_ = new Tokenizer(Tokenizer::train(dir + "/train.txt", dir + "/tok.model", o));
  }
  static void TearDownTestSuite() { delete tok_; }
  static Tokenizer* tok_;
};

Tokenizer* DatasetTest::tok_ = nullptr;

// Splits a token stream at <|endoftext|> (each document ends with one).
std::vector<std::vector<uint16_t>> split_documents(const std::vector<uint16_t>& tokens, uint16_t eot) {
  std::vector<std::vector<uint16_t>> docs(1);
  for (uint16_t t : tokens) {
    if (t == eot)
      docs.emplace_back();
    else
      docs.back().push_back(t);
  }
  EXPECT_TRUE(docs.back().empty()) << "the stream must end with <|endoftext|>";
  docs.pop_back();
  return docs;
}

std::vector<uint16_t> as_u16(const std::vector<int32_t>& ids) { return {ids.begin(), ids.end()}; }

}  // namespace

TEST_F(DatasetTest, DropsShortDocumentsAndKeepsTheRestInOrder) {
  const std::string dir = temp_dir("dataset_drop");
  const auto docs = make_documents(400, 21);
  write_file(dir + "/c.txt", as_tinystories(docs));
  DatasetOptions o;
  o.context = 32;
  const TokenDataset d = load_dataset(dir + "/c.txt", *tok_, o);

  std::vector<std::vector<uint16_t>> kept;
  for (const auto& doc : docs) {
    const auto ids = tok_->encode(doc);
    if (static_cast<int64_t>(ids.size()) >= o.context) kept.push_back(as_u16(ids));
  }
  ASSERT_GT(kept.size(), 100u);
  ASSERT_LT(kept.size(), docs.size());
  EXPECT_EQ(d.documents, 400);
  EXPECT_EQ(d.dropped_short, static_cast<int64_t>(docs.size() - kept.size()));
  EXPECT_EQ(d.train_documents + d.val_documents, static_cast<int64_t>(kept.size()));
  EXPECT_FALSE(d.from_cache);

  // Train and val are the kept documents, each in order, each followed by <|endoftext|>.
  const uint16_t eot = static_cast<uint16_t>(tok_->end_of_text_id());
  const auto train = split_documents(d.train, eot);
  const auto val = split_documents(d.val, eot);
  EXPECT_EQ(static_cast<int64_t>(train.size()), d.train_documents);
  EXPECT_EQ(static_cast<int64_t>(val.size()), d.val_documents);
  size_t ti = 0, vi = 0;
  for (const auto& k : kept) {
    if (ti < train.size() && train[ti] == k)
      ++ti;
    else if (vi < val.size() && val[vi] == k)
      ++vi;
    else
      ADD_FAILURE() << "a kept document is missing or out of order";
  }
  EXPECT_EQ(ti, train.size());
  EXPECT_EQ(vi, val.size());
}

// A folder of a few books draws no validation document at val_fraction 0.1 more often than
// not; the document that came nearest goes to validation instead of refusing the corpus.
TEST_F(DatasetTest, ASmallCorpusStillGetsOneValidationDocument) {
  const std::string dir = temp_dir("dataset_small");
  const auto docs = make_documents(6, 5);
  DatasetOptions o;
  o.context = 1;
  o.threads = 1;
  o.val_fraction = 1e-9;  // no document draws validation on its own
  write_file(dir + "/c.txt", as_tinystories(docs));
  const TokenDataset d = load_dataset(dir + "/c.txt", *tok_, o);
  EXPECT_EQ(d.val_documents, 1);
  EXPECT_EQ(d.train_documents, 5);
  const uint16_t eot = static_cast<uint16_t>(tok_->end_of_text_id());
  const auto val = split_documents(d.val, eot);
  const auto train = split_documents(d.train, eot);
  ASSERT_EQ(val.size(), 1u);
  EXPECT_EQ(train.size(), 5u);
  // The validation document is one whole document of the corpus, and not also in training.
  int found = 0;
  for (const auto& doc : docs) found += as_u16(tok_->encode(doc)) == val[0];
  EXPECT_EQ(found, 1);
  for (const auto& t : train) EXPECT_NE(t, val[0]);
  // A single document still cannot be split.
  write_file(dir + "/one.txt", as_tinystories({docs[0]}));
  EXPECT_THROW(load_dataset(dir + "/one.txt", *tok_, o), CorpusError);
}

TEST_F(DatasetTest, SplitIsDeterministicAndNearValFraction) {
  const std::string dir = temp_dir("dataset_split");
  std::vector<std::string> docs = make_documents(2000, 31);
  write_file(dir + "/c.txt", as_tinystories(docs));
  DatasetOptions o;
  o.context = 1;  // keep everything
  o.threads = 1;
  const TokenDataset a = load_dataset(dir + "/c.txt", *tok_, o);
  o.threads = 3;  // the thread count does not change the result
  const TokenDataset b = load_dataset(dir + "/c.txt", *tok_, o);
  EXPECT_EQ(a.train, b.train);
  EXPECT_EQ(a.val, b.val);
  EXPECT_EQ(a.dropped_short, 0);
  const double frac = static_cast<double>(a.val_documents) / static_cast<double>(a.documents);
  EXPECT_GT(frac, 0.07);
  EXPECT_LT(frac, 0.13);

  o.val_fraction = 0.3;
  const TokenDataset c = load_dataset(dir + "/c.txt", *tok_, o);
  EXPECT_NEAR(static_cast<double>(c.val_documents) / static_cast<double>(c.documents), 0.3, 0.04);

  // Another seed gives another split of the same documents.
  o.val_fraction = 0.1;
  o.seed = 77;
  const TokenDataset e = load_dataset(dir + "/c.txt", *tok_, o);
  EXPECT_NE(e.val, a.val);
  EXPECT_EQ(e.train.size() + e.val.size(), a.train.size() + a.val.size());
}

TEST_F(DatasetTest, DocumentKeepsItsSplitWhateverTheContext) {
  const std::string dir = temp_dir("dataset_stable");
  const auto docs = make_documents(600, 41);
  write_file(dir + "/c.txt", as_tinystories(docs));
  DatasetOptions o;
  o.context = 1;
  const TokenDataset all = load_dataset(dir + "/c.txt", *tok_, o);
  o.context = 40;
  const TokenDataset some = load_dataset(dir + "/c.txt", *tok_, o);
  const uint16_t eot = static_cast<uint16_t>(tok_->end_of_text_id());
  // Every validation document of the long-only set is a validation document of the full set.
  const auto val_all = split_documents(all.val, eot);
  for (const auto& doc : split_documents(some.val, eot))
    EXPECT_NE(std::find(val_all.begin(), val_all.end(), doc), val_all.end());
  EXPECT_GT(some.dropped_short, 0);
}

TEST_F(DatasetTest, CachesTokensAndRebuildsACorruptCache) {
  const std::string dir = temp_dir("dataset_cache");
  write_file(dir + "/corpus/a.txt", as_tinystories(make_documents(300, 51)));
  write_file(dir + "/corpus/b.jsonl", "{\"story\": \"Lily and Tom played with the big red ball in the park.\"}\n");
  DatasetOptions o;
  o.context = 8;
  o.cache_dir = dir + "/corpus/cache";  // inside the corpus folder: must not be read as corpus
  const TokenDataset first = load_dataset(dir + "/corpus", *tok_, o);
  EXPECT_FALSE(first.from_cache);
  const fs::path cache_file = fs::path(o.cache_dir) / ("tokens-" + first.cache_key + ".bin");
  ASSERT_TRUE(fs::exists(cache_file));

  auto same = [](const TokenDataset& a, const TokenDataset& b) {
    EXPECT_EQ(a.train, b.train);
    EXPECT_EQ(a.val, b.val);
    EXPECT_EQ(a.documents, b.documents);
    EXPECT_EQ(a.train_documents, b.train_documents);
    EXPECT_EQ(a.val_documents, b.val_documents);
    EXPECT_EQ(a.dropped_short, b.dropped_short);
    EXPECT_EQ(a.cache_key, b.cache_key);
  };
  const TokenDataset second = load_dataset(dir + "/corpus", *tok_, o);
  EXPECT_TRUE(second.from_cache);
  same(first, second);

  // A flipped token byte: the checksum catches it and the cache is rebuilt.
  {
    std::fstream f(cache_file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(200);
    const char c = static_cast<char>(f.get());
    f.seekp(200);
    f.put(static_cast<char>(c ^ 0x5A));
  }
  const TokenDataset flipped = load_dataset(dir + "/corpus", *tok_, o);
  EXPECT_FALSE(flipped.from_cache);
  same(first, flipped);
  // Truncated (a crash while someone copied it, a full disk): rebuilt too.
  fs::resize_file(cache_file, fs::file_size(cache_file) / 2);
  const TokenDataset truncated = load_dataset(dir + "/corpus", *tok_, o);
  EXPECT_FALSE(truncated.from_cache);
  same(first, truncated);
  write_file(cache_file.string(), "garbage");
  EXPECT_FALSE(load_dataset(dir + "/corpus", *tok_, o).from_cache);
  EXPECT_TRUE(load_dataset(dir + "/corpus", *tok_, o).from_cache);

  // Other options or a changed corpus: another key.
  o.context = 9;
  EXPECT_NE(load_dataset(dir + "/corpus", *tok_, o).cache_key, first.cache_key);
  o.context = 8;
  write_file(dir + "/corpus/b.jsonl", "{\"story\": \"Tom and Lily ran to the big tree in the park, happy.\"}\n");
  const TokenDataset changed = load_dataset(dir + "/corpus", *tok_, o);
  EXPECT_FALSE(changed.from_cache);
  EXPECT_NE(changed.cache_key, first.cache_key);
}

TEST_F(DatasetTest, NoDocumentLongEnough) {
  const std::string dir = temp_dir("dataset_short");
  write_file(dir + "/c.txt", "The cat.\n<|endoftext|>\nThe dog.\n<|endoftext|>\nA ball.\n");
  DatasetOptions o;
  o.context = 64;
  try {
    load_dataset(dir + "/c.txt", *tok_, o);
    FAIL() << "expected an error";
  } catch (const CorpusError& e) {
    const std::string msg = e.what();
    EXPECT_TRUE(contains(msg, "c.txt")) << msg;
    EXPECT_TRUE(contains(msg, "3 document(s)")) << msg;
    EXPECT_TRUE(contains(msg, "3 too short")) << msg;
    EXPECT_TRUE(contains(msg, "64")) << msg;
  }
}

TEST_F(DatasetTest, EmptySplitSaysHowToFixIt) {
  const std::string dir = temp_dir("dataset_onedoc");
  write_file(dir + "/one.txt", make_documents(1, 3)[0] + " and the cat ran to the park");
  DatasetOptions o;
  o.context = 4;
  try {
    load_dataset(dir + "/one.txt", *tok_, o);
    FAIL() << "expected an error";
  } catch (const CorpusError& e) {
    const std::string msg = e.what();
    EXPECT_TRUE(contains(msg, "split is empty")) << msg;
    EXPECT_TRUE(contains(msg, "add more documents")) << msg;
  }
  o.val_fraction = 0.0;
  EXPECT_THROW(load_dataset(dir + "/one.txt", *tok_, o), std::invalid_argument);
}

TEST_F(DatasetTest, ProgressAndCancel) {
  const std::string dir = temp_dir("dataset_progress");
  write_file(dir + "/c.txt", as_tinystories(make_documents(300, 61)));
  DatasetOptions o;
  o.context = 4;
  std::vector<std::string> stages;
  o.progress = [&](const std::string& stage, double) { stages.push_back(stage); };
  load_dataset(dir + "/c.txt", *tok_, o);
  ASSERT_FALSE(stages.empty());
  EXPECT_EQ(stages.back(), "encoding corpus");
  CancelFlag cancel{true};
  o.cancel = &cancel;
  EXPECT_THROW(load_dataset(dir + "/c.txt", *tok_, o), Cancelled);
}
