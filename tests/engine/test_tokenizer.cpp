// Tokenizer (docs/architecture.md): exact round trip for any UTF-8, <|endoftext|> as one token, no
// BOS/EOS, stable serialisation and hash, clear errors. Tokenizers are trained on small
// generated corpora so the suite runs in seconds and needs no data files.
#include <gtest/gtest.h>
#include <unistd.h>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>

#include "hsm/corpus.h"
#include "hsm/tokenizer.h"
#include "test_util.h"

using namespace hsm;
namespace fs = std::filesystem;

namespace {

std::string temp_dir(const std::string& name) { return hsm::test::fresh_temp_dir("hsm_tokenizer_", name); }

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::string utf8(char32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

// TinyStories-like text: a small vocabulary of words, some accented / CJK / emoji, digits,
// paragraphs, stories separated by <|endoftext|> lines.
std::string story_corpus(int stories, uint32_t seed) {
  static const char* words[] = {"the",   "a",    "cat",  "dog",  "Lily", "Tom", "ran",    "saw",    "happy",
                                "big",   "red",  "ball", "park", "said", "mom", "tree",   "sun",    "played",
                                "with",  "and",  "was",  "very", "to",   "her", "his",    "friend", "café",
                                "naïve", "über", "日本", "猫",   "😀",    "🐶",   "Привет", "mañana", "one"};
  std::mt19937 rng(seed);
  std::string text;
  for (int s = 0; s < stories; ++s) {
    const int paragraphs = 1 + static_cast<int>(rng() % 3);
    for (int p = 0; p < paragraphs; ++p) {
      const int n = 8 + static_cast<int>(rng() % 40);
      for (int w = 0; w < n; ++w) {
        if (w) text += (rng() % 12 == 0) ? ", " : " ";
        text += words[rng() % (sizeof words / sizeof *words)];
        if (rng() % 20 == 0) text += " " + std::to_string(rng() % 1000);
      }
      text += ".\n";
    }
    text += "<|endoftext|>\n";
  }
  return text;
}

// Random text over code points from every range that matters: ASCII and its whitespace,
// Latin, CJK, emoji, the whole Unicode range (not surrogates), U+2581 (sentencepiece's own
// space marker) and U+0000.
std::string random_utf8(std::mt19937& rng, int length) {
  std::string s;
  for (int i = 0; i < length; ++i) {
    char32_t cp = 0;
    switch (rng() % 10) {
      case 0:
        cp = U" \n\t\r"[rng() % 4];
        break;
      case 1:
        cp = 0x80 + rng() % (0x250 - 0x80);
        break;
      case 2:
        cp = 0x4E00 + rng() % (0x9FFF - 0x4E00);
        break;
      case 3:
        cp = 0x1F300 + rng() % (0x1FAFF - 0x1F300);
        break;
      case 4:
        do cp = rng() % 0x110000;
        while (cp >= 0xD800 && cp <= 0xDFFF);
        break;
      case 5:
        cp = (rng() % 2) ? 0x2581 : (rng() % 2 ? 0 : 0x20);
        break;
      default:
        cp = 0x20 + rng() % 0x5F;
        break;  // printable ASCII
    }
    s += utf8(cp);
  }
  return s;
}

class TokenizerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string dir = temp_dir("suite");
    corpus_path_ = new std::string(dir + "/stories.txt");
    write_file(*corpus_path_, story_corpus(2000, 7));
    TokenizerTrainOptions o;
    o.vocab_size = 400;
    tok_ = new Tokenizer(Tokenizer::train(*corpus_path_, dir + "/tok.model", o));
  }
  static void TearDownTestSuite() {
    delete tok_;
    delete corpus_path_;
  }
  static Tokenizer* tok_;
  static std::string* corpus_path_;
};

Tokenizer* TokenizerTest::tok_ = nullptr;
std::string* TokenizerTest::corpus_path_ = nullptr;

}  // namespace

TEST_F(TokenizerTest, TrainsRequestedVocabulary) {
  EXPECT_EQ(tok_->vocab_size(), 400);
  // Learned merges: a frequent word is fewer tokens than bytes.
  EXPECT_LT(tok_->encode(" played").size(), 3u);
}

TEST_F(TokenizerTest, RoundTripsRandomUtf8) {
  std::mt19937 rng(42);
  for (int i = 0; i < 500; ++i) {
    const std::string text = random_utf8(rng, 1 + static_cast<int>(rng() % 60));
    EXPECT_EQ(tok_->decode(tok_->encode(text)), text) << "case " << i;
  }
}

TEST_F(TokenizerTest, RoundTripsWhitespaceAndSpecialCases) {
  const std::vector<std::string> cases = {
      "",
      " ",
      "   leading spaces",
      "trailing spaces   ",
      "multiple   inner    spaces",
      "\n",
      "a\n\nb\n",
      "\ttab\t\tand\r\nCRLF",
      "\xE2\x96\x81",  // U+2581 alone
      " \xE2\x96\x81 x\xE2\x96\x81\xE2\x96\x81y ",
      "emoji 😀🐶 and CJK 日本語 and Привет",
      "<|endoftext|>",
      "a<|endoftext|>b",
      "<|endoftext",  // a prefix of the special token is ordinary text
      std::string("nul\0byte", 8),
      "digits 1234567890 3.14",
      "The cat played with the ball.\n\nThe dog was happy.",
  };
  for (const auto& text : cases) EXPECT_EQ(tok_->decode(tok_->encode(text)), text) << "[" << text << "]";
}

TEST_F(TokenizerTest, EncodesExactlyAsSentencepiece) {
  // encode() cuts text into words and caches their ids; the result must be what
  // sentencepiece gives for the whole text (U+2581 aside, which encode() sends as bytes).
  sentencepiece::SentencePieceProcessor sp;
  ASSERT_TRUE(sp.LoadFromSerializedProto(tok_->bytes()).ok());
  auto reference = [&](const std::string& text) {
    std::vector<int> ids;
    EXPECT_TRUE(sp.Encode(text, &ids).ok());
    return std::vector<int32_t>(ids.begin(), ids.end());
  };
  std::mt19937 rng(9);
  for (int i = 0; i < 300; ++i) {
    std::string text = random_utf8(rng, 1 + static_cast<int>(rng() % 80));
    for (size_t at; (at = text.find("\xE2\x96\x81")) != std::string::npos;) text.replace(at, 3, " ");
    EXPECT_EQ(tok_->encode(text), reference(text)) << "case " << i;
  }
  const std::string corpus = story_corpus(200, 13);
  EXPECT_EQ(tok_->encode(corpus), reference(corpus));
  for (const std::string text : {"  two  spaces   three", " leading", "trailing ", "a\n b \n\n  c", "x  \t y",
                                 "The cat played with the ball, and the ball played with the cat."})
    EXPECT_EQ(tok_->encode(text), reference(text)) << "[" << text << "]";
}

TEST_F(TokenizerTest, ForeignModelWithDummyPrefixEncodesAsSentencepiece) {
  // A model trained elsewhere with a dummy prefix (sentencepiece's default) is not
  // word-local: cut into words, " cat" would become "▁▁cat". encode() must notice and
  // encode whole texts.
  const std::string dir = temp_dir("foreign");
  std::string model;
  const auto status = sentencepiece::SentencePieceTrainer::Train({{"input", *corpus_path_},
                                                                  {"model_type", "bpe"},
                                                                  {"vocab_size", "400"},
                                                                  {"byte_fallback", "true"},
                                                                  {"user_defined_symbols", "<|endoftext|>"},
                                                                  {"remove_extra_whitespaces", "false"},
                                                                  {"minloglevel", "2"}},
                                                                 nullptr, &model);
  ASSERT_TRUE(status.ok()) << status.ToString();
  const Tokenizer foreign = Tokenizer::from_bytes(model);
  sentencepiece::SentencePieceProcessor sp;
  ASSERT_TRUE(sp.LoadFromSerializedProto(model).ok());
  for (const std::string text : {"The cat played with the ball.", "Lily  and   Tom", " the dog ran"}) {
    std::vector<int> ids;
    ASSERT_TRUE(sp.Encode(text, &ids).ok());
    EXPECT_EQ(foreign.encode(text), std::vector<int32_t>(ids.begin(), ids.end())) << text;
  }
}

TEST_F(TokenizerTest, EndOfTextIsOneToken) {
  const int32_t eot = tok_->end_of_text_id();
  EXPECT_EQ(tok_->encode("<|endoftext|>"), std::vector<int32_t>{eot});
  EXPECT_EQ(tok_->piece(eot), "<|endoftext|>");
  const auto ids = tok_->encode("The end.<|endoftext|>Once upon a time");
  EXPECT_EQ(std::count(ids.begin(), ids.end(), eot), 1);
  // Ordinary text never produces it.
  const auto plain = tok_->encode("The end. Once upon a time <|endoftext");
  EXPECT_EQ(std::count(plain.begin(), plain.end(), eot), 0);
}

TEST_F(TokenizerTest, AddsNoBosOrEos) {
  EXPECT_TRUE(tok_->encode("").empty());
  const auto a = tok_->encode("cat");
  const auto b = tok_->encode("dog");
  auto ab = a;
  ab.insert(ab.end(), b.begin(), b.end());
  // Nothing added at the ends: "cat" then "dog" is what a two-part text gives when the
  // parts tokenize independently (a newline cannot merge with letters).
  auto joined = tok_->encode("cat\ndog");
  ASSERT_EQ(joined.size(), a.size() + 1 + b.size());
  EXPECT_TRUE(std::equal(a.begin(), a.end(), joined.begin()));
  EXPECT_TRUE(std::equal(b.begin(), b.end(), joined.end() - static_cast<long>(b.size())));
}

TEST_F(TokenizerTest, PiecesForDisplay) {
  // A character outside the training text falls back to bytes, shown as <0xXX>.
  const auto ids = tok_->encode("\xE2\x82\xAC");  // "€"
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(tok_->piece(ids[0]), "<0xE2>");
  EXPECT_EQ(tok_->piece(ids[2]), "<0xAC>");
  // Spaces show as spaces, not as sentencepiece's U+2581.
  std::string shown;
  for (int32_t id : tok_->encode(" the cat")) shown += tok_->piece(id);
  EXPECT_EQ(shown, " the cat");
  EXPECT_THROW(tok_->piece(-1), std::out_of_range);
  EXPECT_THROW(tok_->piece(tok_->vocab_size()), std::out_of_range);
  EXPECT_THROW(tok_->decode({tok_->vocab_size()}), std::out_of_range);
}

TEST_F(TokenizerTest, SaveLoadAndFromBytesAreEquivalent) {
  const std::string dir = temp_dir("save");
  const std::string path = dir + "/sub/tokenizer.model";
  tok_->save(path);
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  const Tokenizer loaded = Tokenizer::load(path);
  const Tokenizer copy = Tokenizer::from_bytes(tok_->bytes());
  EXPECT_EQ(loaded.bytes(), tok_->bytes());
  EXPECT_EQ(loaded.hash(), tok_->hash());
  EXPECT_EQ(copy.hash(), tok_->hash());
  EXPECT_EQ(loaded.vocab_size(), tok_->vocab_size());
  EXPECT_EQ(loaded.end_of_text_id(), tok_->end_of_text_id());
  const std::string text = "Lily saw the big red ball in the park. 😀\n";
  EXPECT_EQ(loaded.encode(text), tok_->encode(text));
  EXPECT_EQ(copy.encode(text), tok_->encode(text));
  // The hash is a hex digest of the bytes.
  EXPECT_EQ(tok_->hash().size(), 16u);
  EXPECT_EQ(tok_->hash().find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST_F(TokenizerTest, TrainingIsDeterministicAndHashTracksTheModel) {
  const std::string dir = temp_dir("determinism");
  TokenizerTrainOptions o;
  o.vocab_size = 400;
  const Tokenizer again = Tokenizer::train(*corpus_path_, dir + "/a.model", o);
  EXPECT_EQ(again.bytes(), tok_->bytes());
  EXPECT_EQ(again.hash(), tok_->hash());
  o.vocab_size = 350;
  const Tokenizer smaller = Tokenizer::train(*corpus_path_, dir + "/b.model", o);
  EXPECT_EQ(smaller.vocab_size(), 350);
  EXPECT_NE(smaller.hash(), tok_->hash());
}

TEST_F(TokenizerTest, SamplingIsSeeded) {
  const std::string dir = temp_dir("sampling");
  TokenizerTrainOptions o;
  o.vocab_size = 350;
  o.input_sentence_size = 200;  // of ~4000 lines
  const Tokenizer a = Tokenizer::train(*corpus_path_, dir + "/a.model", o);
  const Tokenizer b = Tokenizer::train(*corpus_path_, dir + "/b.model", o);
  EXPECT_EQ(a.hash(), b.hash());
  o.seed = 99;
  const Tokenizer c = Tokenizer::train(*corpus_path_, dir + "/c.model", o);
  EXPECT_NE(a.hash(), c.hash());
  o.input_sentence_size = 0;
  const Tokenizer all = Tokenizer::train(*corpus_path_, dir + "/all.model", o);
  EXPECT_NE(a.hash(), all.hash());
}

TEST(Tokenizer, SplitsLinesLongerThanMaxSentenceLength) {
  // One 300 KB line: sentencepiece would skip it whole and have nothing to learn from.
  const std::string dir = temp_dir("longline");
  std::string line;
  static const char* words[] = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "日本", "über"};
  std::mt19937 rng(3);
  while (line.size() < 300'000) line += std::string(words[rng() % 8]) + " ";
  write_file(dir + "/long.txt", line);
  TokenizerTrainOptions o;
  o.vocab_size = 300;
  o.max_sentence_length = 1000;
  const Tokenizer t = Tokenizer::train(dir + "/long.txt", dir + "/tok.model", o);
  EXPECT_EQ(t.vocab_size(), 300);
  EXPECT_LE(t.encode(" epsilon").size(), 2u);
  EXPECT_EQ(t.decode(t.encode(line)), line);
}

TEST(Tokenizer, VocabularyTooLargeForCorpusSaysHowLarge) {
  const std::string dir = temp_dir("toolarge");
  write_file(dir + "/tiny.txt", "the cat sat on the mat.\nthe dog sat on the log.\n");
  TokenizerTrainOptions o;
  o.vocab_size = 5000;
  try {
    Tokenizer::train(dir + "/tiny.txt", dir + "/tok.model", o);
    FAIL() << "expected an error";
  } catch (const CorpusError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("tiny.txt"), std::string::npos) << msg;
    EXPECT_NE(msg.find("5000"), std::string::npos) << msg;
    EXPECT_NE(msg.find("at most"), std::string::npos) << msg;
  }
  EXPECT_FALSE(fs::exists(dir + "/tok.model"));
}

TEST(Tokenizer, VocabularyTooSmallForCharactersSaysHowLarge) {
  // Each common character needs a slot besides the 258 fixed tokens.
  const std::string dir = temp_dir("toosmall");
  std::string text;
  for (char32_t cp = 0x4E00; cp < 0x4E00 + 100; ++cp) text += utf8(cp) + utf8(cp + 1) + "\n";
  write_file(dir + "/cjk.txt", text);
  TokenizerTrainOptions o;
  o.vocab_size = 300;
  try {
    Tokenizer::train(dir + "/cjk.txt", dir + "/tok.model", o);
    FAIL() << "expected an error";
  } catch (const CorpusError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("cjk.txt"), std::string::npos) << msg;
    EXPECT_NE(msg.find("too small"), std::string::npos) << msg;
    EXPECT_NE(msg.find("at least 3"), std::string::npos) << msg;  // 258 + ~100 characters
  }
}

TEST(Tokenizer, RejectsBadOptions) {
  const std::string dir = temp_dir("options");
  write_file(dir + "/c.txt", story_corpus(10, 1));
  TokenizerTrainOptions o;
  o.vocab_size = 100;  // smaller than the 256 byte tokens
  EXPECT_THROW(Tokenizer::train(dir + "/c.txt", dir + "/t.model", o), std::invalid_argument);
  o.vocab_size = 70000;  // ids would not fit 16 bits
  EXPECT_THROW(Tokenizer::train(dir + "/c.txt", dir + "/t.model", o), std::invalid_argument);
}

TEST(Tokenizer, LoadErrorsNameThePath) {
  const std::string dir = temp_dir("load");
  for (const std::string& path : {dir + "/missing.model", dir + "/garbage.model", dir + "/empty.model"}) {
    if (path.find("garbage") != std::string::npos) write_file(path, "this is not a sentencepiece model at all");
    if (path.find("empty") != std::string::npos) write_file(path, "");
    try {
      Tokenizer::load(path);
      ADD_FAILURE() << "expected an error for " << path;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
}

TEST(Tokenizer, ReportsProgressAndHonoursCancel) {
  const std::string dir = temp_dir("progress");
  write_file(dir + "/c.txt", story_corpus(300, 2));
  TokenizerTrainOptions o;
  o.vocab_size = 350;
  std::vector<std::pair<std::string, double>> calls;
  o.progress = [&](const std::string& stage, double f) { calls.emplace_back(stage, f); };
  Tokenizer::train(dir + "/c.txt", dir + "/t.model", o);
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.front().first, "reading corpus");
  EXPECT_EQ(calls.back(), std::make_pair(std::string("training tokenizer"), 1.0));
  bool read_all = false;
  for (const auto& [stage, f] : calls) {
    EXPECT_TRUE(f == -1.0 || (f >= 0.0 && f <= 1.0)) << stage << " " << f;
    read_all |= stage == "reading corpus" && f == 1.0;
  }
  EXPECT_TRUE(read_all);

  CancelFlag cancel{true};
  o.cancel = &cancel;
  EXPECT_THROW(Tokenizer::train(dir + "/c.txt", dir + "/cancelled.model", o), Cancelled);
  EXPECT_FALSE(fs::exists(dir + "/cancelled.model"));
}

TEST(Tokenizer, EmptyTokenizerThrowsInsteadOfCrashing) {
  const Tokenizer t;
  EXPECT_THROW(t.encode("x"), std::logic_error);
}

// Found by fuzz/fuzz_tokenizer.cpp (fuzz/corpus/tokenizer/regression-nul-piece): a piece that
// starts with a NUL byte made sentencepiece's trie builder throw its own exception type
// (Darts::Details::Exception, no std::runtime_error) across the plugin boundary, which
// promises that nothing crosses it; a caller that catches std::runtime_error, as the fuzz
// target does, ended there. It is a refused model now, like any other.
TEST(Tokenizer, ModelThatMakesSentencepieceThrowIsRefused) {
  // ModelProto { pieces: [{piece: "<unk>", type: UNKNOWN}, {piece: "\0x"}] }: a unigram model
  // (the default type), whose trie treats "\0x" as an empty key.
  const std::string model("\x0a\x09\x0a\x05<unk>\x18\x02\x0a\x04\x0a\x02\x00x", 17);
  try {
    Tokenizer::from_bytes(model);
    ADD_FAILURE() << "accepted a model with a NUL piece";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("not a sentencepiece model"), std::string::npos) << e.what();
  }
}
