#include "gui/widgets/task_example_bar.h"

#include <QHBoxLayout>
#include <QJsonArray>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

namespace studio {

TaskExampleBar::TaskExampleBar(const QString& objectPrefix, QWidget* parent) : QWidget(parent) {
  task_ = new QLabel;
  task_->setObjectName(objectPrefix + QStringLiteral("_task"));
  task_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  example_ = new QSpinBox;
  example_->setObjectName(objectPrefix + QStringLiteral("_example"));
  example_->setRange(0, 999999);
  example_->setKeyboardTracking(false);  // typing "12" runs example 12, not 1 then 12
  example_->setToolTip(tr("Which test example is the prompt: test examples come from seeds no training example "
                          "uses, so the model never saw this one"));
  next_ = new QPushButton(tr("Next example"));
  next_->setObjectName(objectPrefix + QStringLiteral("_next"));
  answers_ = new QLabel;
  answers_->setObjectName(objectPrefix + QStringLiteral("_answers"));
  answers_->setWordWrap(true);
  answers_->setTextFormat(Qt::RichText);

  auto* row = new QHBoxLayout;
  row->setContentsMargins(0, 0, 0, 0);
  row->addWidget(new QLabel(tr("Example")));
  row->addWidget(example_);
  row->addWidget(next_);
  row->addSpacing(12);
  row->addWidget(task_, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  layout->addLayout(row);
  layout->addWidget(answers_);

  connect(example_, &QSpinBox::valueChanged, this, &TaskExampleBar::exampleChosen);
  connect(next_, &QPushButton::clicked, this, [this] { example_->setValue(example_->value() + 1); });
}

bool TaskExampleBar::follow(const std::string& task, std::initializer_list<QWidget*> textPrompt) {
  const bool isTask = !task.empty();
  for (QWidget* w : textPrompt) w->setVisible(!isTask);
  setVisible(isTask);
  if (isTask) task_->setText(tr("task: %1 · test examples").arg(QString::fromStdString(task)));
  return isTask;
}

int TaskExampleBar::example() const { return example_->value(); }

void TaskExampleBar::setExample(int index) { example_->setValue(index); }

void TaskExampleBar::clearAnswers() {
  answers_->clear();
  answers_->setToolTip(QString());
}

QString TaskExampleBar::answersText() const { return answers_->text(); }

void TaskExampleBar::showAnswers(const hsm::TaskPrompt& p) {
  if (p.answers.empty()) {
    answers_->setText(tr("Test example %1 has no answer position (nothing in it asks for one).").arg(p.index));
    return;
  }
  // The first answers on the line, every one in its tooltip: in-context recall asks dozens.
  constexpr int kShown = 10;
  QStringList items;
  for (size_t i = 0; i < p.answers.size(); ++i) {
    const auto t = static_cast<size_t>(p.answers[i]);
    const bool has = i < p.predicted.size();
    const bool ok = has && p.right_at(i);  // regbench: any symbol its DFA allows there
    const QString said = has ? QString::fromStdString(p.predicted_labels[i]).toHtmlEscaped() : QStringLiteral("?");
    items << tr("%1 at %2: <span style='color:%3'>%4</span> (right: %5)")
                 .arg(QString::fromStdString(p.labels[t]).toHtmlEscaped())
                 .arg(t)
                 .arg(ok ? QStringLiteral("#2a7d2a") : QStringLiteral("#b03030"), said + (ok ? " ✓" : " ✗"))
                 .arg(QString::fromStdString(p.answer_labels[i]).toHtmlEscaped());
  }
  const int n = static_cast<int>(items.size());
  answers_->setText(tr("<b>▸ answers</b> (the model's most likely token, %1 of %2 right%3): %4%5")
                        .arg(p.right())
                        .arg(n)
                        .arg(p.difficulty >= 0 ? tr("; distance %1").arg(p.difficulty) : QString())
                        .arg(QStringList(items.mid(0, kShown)).join(QStringLiteral(" · ")))
                        .arg(n > kShown ? tr(" · … %1 more (hover)").arg(n - kShown) : QString()));
  answers_->setToolTip(n > kShown ? items.join(QStringLiteral("<br>")) : QString());
}

QStringList TaskExampleBar::markedLabels(const hsm::TaskPrompt& p, const std::vector<std::string>& labels) {
  QStringList out;
  for (const std::string& l : labels) out << QString::fromStdString(l);
  for (int64_t t : p.answers)
    if (t < out.size()) out[static_cast<int>(t)].prepend(QStringLiteral("▸"));
  return out;
}

QVector<int> TaskExampleBar::answerRows(const hsm::TaskPrompt& p) {
  QVector<int> rows;
  for (int64_t t : p.answers) rows << static_cast<int>(t);
  return rows;
}

QJsonObject TaskExampleBar::json(const hsm::TaskPrompt& p) {
  QJsonArray ids, labels, answers;
  for (int32_t id : p.tokens) ids.append(id);
  for (const std::string& l : p.labels) labels.append(QString::fromStdString(l));
  for (size_t i = 0; i < p.answers.size(); ++i) {
    const auto t = static_cast<size_t>(p.answers[i]);
    QJsonObject a{{QStringLiteral("position"), static_cast<qint64>(t)},
                  {QStringLiteral("right"), p.targets[t]},
                  {QStringLiteral("right_label"), QString::fromStdString(p.answer_labels[i])}};
    if (i < p.predicted.size()) {
      a.insert(QStringLiteral("predicted"), p.predicted[i]);
      a.insert(QStringLiteral("predicted_label"), QString::fromStdString(p.predicted_labels[i]));
    }
    answers.append(a);
  }
  QJsonObject out{{QStringLiteral("task"), QString::fromStdString(p.task)},
                  {QStringLiteral("split"), QStringLiteral("test")},
                  {QStringLiteral("index"), static_cast<qint64>(p.index)},
                  {QStringLiteral("token_ids"), ids},
                  {QStringLiteral("labels"), labels},
                  {QStringLiteral("answers"), answers},
                  {QStringLiteral("right"), static_cast<qint64>(p.right())}};
  if (p.difficulty >= 0) out.insert(QStringLiteral("difficulty"), static_cast<qint64>(p.difficulty));
  return out;
}

}  // namespace studio
