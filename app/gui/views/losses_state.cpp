#include "gui/views/losses_state.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTextStream>
#include <optional>

#include "gui/engine/engine_host.h"
#include "gui/engine_types.h"
#include "gui/run_evaluation.h"
#include "gui/run_list.h"
#include "hsm/dataset.h"
#include "hsm/evaluator.h"
#include "hsm/model.h"
#include "hsm/prober.h"
#include "hsm/tokenizer.h"

namespace studio {
namespace {

QString runName(const QString& dir) { return QFileInfo(dir).fileName(); }

}  // namespace

LossesState::LossesState(RunList* runs, EngineHost* engine, QObject* parent)
    : QObject(parent), runs_(runs), engine_(engine) {}

const hsm::TokenScores& LossesState::scores() const {
  static const hsm::TokenScores none;
  const auto it = scores_.constFind(scoredRun_);
  return it == scores_.constEnd() ? none : *it;
}

const hsm::TokenScores* LossesState::scoresOf(const QString& runDir) const {
  const auto it = scores_.constFind(runDir);
  return it == scores_.constEnd() ? nullptr : &*it;
}

QStringList LossesState::comparedRuns() const {
  QStringList out;
  for (const QString& dir : order_)
    if (dir != scoredRun_ && scores_.contains(dir)) out << dir;
  return out;
}

bool LossesState::following() const {
  const RunEntry* run = runs_->currentRun();
  return !scoredRun_.isEmpty() && run && scoredRun_ == QDir(run->dir).absolutePath();
}

void LossesState::clear() {
  cancel();
  scoredRun_.clear();
  scores_.clear();
  evaluationLoss_ = std::nan("");
  evaluationWindows_ = 0;
  pieces_.clear();
  clearAlternatives();
}

void LossesState::start(const RunEntry& run, const QString& data, int maxWindows) {
  // Every run on the current run's windows: its trained layout, named explicitly so that the
  // other runs are scored on the same windows whatever they were trained on.
  const std::string windows = run.info.training.windows;
  clearAlternatives();
  scores_.clear();
  notes_.clear();
  order_.clear();
  scoredRun_ = run.dir;
  scoredStamp_ = run.config_stamp;
  order_ << run.dir;
  for (int i = 0; i < runs_->count(); ++i)  // task runs read no text: not compared
    if (runs_->at(i).dir != run.dir && runs_->at(i).has_info && runs_->at(i).task.empty()) order_ << runs_->at(i).dir;
  // The headline is the run's own evaluation on every window: read from its record when it has
  // one, else computed beside the scores when fewer windows are scored.
  evaluationLoss_ = std::nan("");
  evaluationWindows_ = 0;
  const std::optional<RunEvaluation> recorded = recorded_evaluation(run, data);
  if (recorded) evaluationLoss_ = recorded->loss;
  ask_ = {data, windows, maxWindows, maxWindows > 0 && !recorded};
  ask(0);  // the others once its tokenizer is known
}

void LossesState::ask(int index) {
  const QString dir = order_[index];
  // Another run is compared only with the same tokenizer: refused before anything of it is scored.
  struct Same {
    std::string run, hash;
    int64_t vocab = 0;
  } same;
  if (const hsm::TokenScores* a = index > 0 ? scoresOf(scoredRun_) : nullptr)
    same = {a->run, a->tokenizer_hash, a->vocab_size};
  Reply<LossScoring> reply = engine_->analysis().stream<LossScoring>(dir, [ask = ask_, same, index](const CallContext& c) {
    const std::shared_ptr<const hsm::Model> model = c.model();
    const hsm::Tokenizer& tok = model->tokenizer();
    // In one line for people (issue 69: the engine's refusal names both tokenizers' files and
    // hashes, six lines a model); its vocabulary says which.
    if (!same.hash.empty() && (tok.hash() != same.hash || model->config().vocab_size != same.vocab))
      throw std::invalid_argument("another tokenizer (" + std::to_string(model->config().vocab_size) + " pieces against " +
                                  std::to_string(same.vocab) +
                                  "): its tokens are other pieces of text, so its losses do not line up token by token");
    hsm::EvalOptions options;
    options.windows = ask.windows;
    options.max_windows = ask.maxWindows;
    options.cache_dir = hsm::default_cache_dir();
    options.cancel = c.cancelFlag();
    options.progress = [&](const std::string& stage, double f) { c.progress(stage, f); };
    LossScoring out;
    out.scores = hsm::Evaluator(model).score_tokens(c.evalSet(ask.data, options), options);
    if (index == 0 && ask.evaluateAll) {
      hsm::EvalOptions all = options;
      all.max_windows = 0;
      all.progress = [&](const std::string& stage, double f) { c.progress(stage + " (every window)", f); };
      out.evaluation = c.trainedLoss(ask.data, all);
    }
    out.pieces.reserve(static_cast<size_t>(out.scores.vocab_size));
    for (int32_t id = 0; id < out.scores.vocab_size; ++id) {
      std::string piece = tok.piece(id);
      if (piece == "<0x0A>") piece = "↵\n";  // a line break shows as one, marked so it can be hovered
      out.pieces.push_back(std::move(piece));
    }
    return out;
  });
  connect(reply.feed(), &CallFeed::progress, this,
          [this, index, of = static_cast<int>(order_.size()), name = runName(dir)](const QString& stage, double f) {
            emit progress(index, of, name, stage, f);
          });
  reply.result()
      .then(this, [this, dir](const LossScoring& s) { onScored(dir, s); })
      .onFailed(this, [this, dir](const CallFailed& e) { onFailed(dir, e); });
  scoring_.insert(dir, reply);
}

void LossesState::startTask(const RunEntry& run) {
  // As `hsm eval RUN` on a task run: fresh test examples (never trained on), scored on the
  // answers. Cheap for the tiny models a task trains: one batch pass over them.
  cancel();
  scores_.clear();
  clearAlternatives();
  scoredRun_ = run.dir;
  taskScoring_ = true;
  // The run's model as the other views read it: with its what-if edit (the Weights view), if any.
  const bool edited = !engine_->whatIf(run.dir).empty();
  engine_->analysis()
      .call<hsm::TaskScore>(run.dir,
                            [](const CallContext& c) { return hsm::Evaluator(c.model()).score_task(kTaskExamples); })
      .then(this,
            [this, edited, dir = run.dir](const hsm::TaskScore& s) {
              taskScoring_ = false;
              emit taskScored(dir, s, edited);
            })
      .onFailed(this, [this, dir = run.dir](const CallFailed& e) {
        taskScoring_ = false;
        lastError_ = e.message();
        emit taskFailed(dir, e.message());
      });
}

void LossesState::cancel() {
  for (const Reply<LossScoring>& r : scoring_) r.cancel();
}

void LossesState::onScored(const QString& dir, const LossScoring& s) {
  if (scoring_.contains(dir) && following()) {
    if (dir == scoredRun_) {
      scores_.insert(dir, s.scores);
      if (ask_.maxWindows == 0) {  // every window scored: the scores' mean is the evaluation
        evaluationLoss_ = s.scores.result.loss;
        evaluationWindows_ = s.scores.result.window_count;
      } else if (s.evaluation.window_count > 0) {
        evaluationLoss_ = s.evaluation.loss;
        evaluationWindows_ = s.evaluation.window_count;
      }
      pieces_ = s.pieces;
      for (int i = 1; i < order_.size(); ++i) ask(i);
    } else if (const hsm::TokenScores* a = scoresOf(scoredRun_); a && a->tokenizer_hash != s.scores.tokenizer_hash) {
      notes_ << tr("%1 left out: another tokenizer").arg(runName(dir));
    } else if (a && a->tokens.size() != s.scores.tokens.size()) {
      notes_ << tr("%1 left out: other windows (another context)").arg(runName(dir));
    } else {
      scores_.insert(dir, s.scores);
    }
  }
  finishOne(dir);
}

void LossesState::onFailed(const QString& dir, const CallFailed& e) {
  if (following()) {
    if (e.cancelled())
      lastError_ = tr("Scoring cancelled.");
    else if (dir == scoredRun_)
      lastError_ = tr("Scoring %1 failed: %2").arg(runName(dir), e.message());
    else
      notes_ << tr("%1 left out: %2").arg(runName(dir), e.message());
  }
  finishOne(dir);
}

void LossesState::finishOne(const QString& dir) {
  scoring_.remove(dir);
  if (isScoring()) return;
  // The runs asked after the scored run are only kept beside it.
  if (following() && !hasScores()) {
    scores_.clear();
    if (lastError_.isEmpty()) lastError_ = tr("Scoring %1 failed.").arg(runName(scoredRun_));
  }
  emit finished();
}

QString LossesState::exportTokens(const QString& path) const {
  if (!hasScores()) return tr("No losses to export: score first.");
  QFile file(path);
  if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate | QIODevice::Text))
    return tr("Cannot write %1: %2").arg(path, file.errorString());
  QTextStream out(&file);
  QStringList header{"window", "position", "input", "target", "text", "document", "distance"};
  QList<const hsm::TokenScores*> runs;
  for (const QString& dir : order_)
    if (const hsm::TokenScores* r = scoresOf(dir)) {
      runs << r;
      for (const char* f : {"loss", "prob", "rank"}) header << runName(dir) + QLatin1Char(' ') + QLatin1String(f);
    }
  out << header.join(QLatin1Char(',')) << '\n';
  const hsm::TokenScores& a = scores();
  for (size_t i = 0; i < a.tokens.size(); ++i) {
    const hsm::TokenScore& t = a.tokens[i];
    QString text = static_cast<size_t>(t.target) < pieces_.size() ? qstr(pieces_[static_cast<size_t>(t.target)]) : QString();
    text.remove(QLatin1Char('\n'));  // a line break is its ↵: one line per token
    text.replace(QLatin1Char('"'), QStringLiteral("\"\""));
    out << t.window << ',' << t.position << ',' << t.input << ',' << t.target << ",\"" << text << "\"," << t.document
        << ',' << (t.distance > 0 ? QString::number(t.distance) : QString());
    for (const hsm::TokenScores* r : runs)
      out << ',' << QString::number(r->tokens[i].loss, 'g', 17) << ',' << QString::number(r->tokens[i].prob, 'g', 17)
          << ',' << r->tokens[i].rank;
    out << '\n';
  }
  out.flush();
  return file.error() == QFile::NoError ? QString() : tr("Cannot write %1: %2").arg(path, file.errorString());
}

void LossesState::clearAlternatives() {
  alternatives_.clear();
  alternativesDocument_ = -1;
}

void LossesState::askAlternatives(int64_t document) {
  alternatives_.clear();
  alternativesDocument_ = document;
  const hsm::TokenScores& s = scores();
  // The document's windows and their inputs (the same for every run: same windows).
  QMap<qint64, std::vector<int32_t>> inputs;
  for (const hsm::TokenScore& token : s.tokens) {
    if (token.document != document || inputs.contains(token.window)) continue;
    std::vector<int32_t> in;
    for (const hsm::TokenScore& t : s.tokens)
      if (t.window == token.window) in.push_back(t.input);
    inputs.insert(token.window, in);
  }
  if (inputs.isEmpty()) return;
  for (const QString& dir : order_) {
    if (!scores_.contains(dir)) continue;
    engine_->interactive()
        .call<WindowTops>(dir,
                          [inputs](const CallContext& c) {
                            const hsm::Prober prober(c.model());
                            WindowTops out;
                            for (auto it = inputs.cbegin(); it != inputs.cend(); ++it)
                              out.insert(it.key(), prober.probe_tokens(it.value(), kAlternatives).lens.back().top);
                            return out;
                          })
        .then(this, [this, dir, document, run = scoredRun_](const WindowTops& tops) {
          if (run == scoredRun_ && document == alternativesDocument_ && scores_.contains(dir))
            alternatives_.insert(dir, tops);
        });
  }
}

std::vector<hsm::LensToken> LossesState::alternatives(const QString& runDir, int64_t window, int32_t position) const {
  const auto tops = alternatives_.constFind(runDir);
  if (tops == alternatives_.constEnd() || !tops->contains(window)) return {};
  const auto& top = tops->value(window);
  return static_cast<size_t>(position) < top.size() ? top[static_cast<size_t>(position)] : std::vector<hsm::LensToken>{};
}

bool LossesState::hasAlternatives() const {
  for (const QString& dir : order_)
    if (scores_.contains(dir) && !alternatives_.contains(dir)) return false;
  return true;
}

}  // namespace studio
