#include "gui/help/view_help.h"

#include <QAction>
#include <QCoreApplication>
#include <QMenu>
#include <QMenuBar>
#include <QRegularExpression>
#include <QShortcut>
#include <QTextBrowser>
#include <QVBoxLayout>
#include <set>

#include "gui/engine_types.h"
#include "gui/widgets/glossary.h"
#include "hsm/mixer_kind.h"

namespace studio::help {
namespace {

const char* kStartBody = QT_TRANSLATE_NOOP(
    "help",
    "<p>HSM Studio trains, inspects and plays with small GPT-style language models whose attention can be replaced "
    "by <b>Hierarchical Shift Mixing</b>: layer l mixes each token with the one 2<sup>l</sup> places back, so the "
    "stack reaches the whole context at a cost linear in its length.</p>"
    "<p>Start with the demo models (File › Open the demo models) and the Playground, train a small model in two "
    "minutes, or open a run folder. Help › Take the tour walks through the views.</p>");

}  // namespace

// The engine's formulas are written for a text file ("y_i = Σ_{j≤i} w_ij v_j", "2^l"): in the
// help their subscripts and powers are set as such (issue 69: people read "Σ_{j≤i}" as code).
QString formulaHtml(const QString& formula) {
  QString html = formula.toHtmlEscaped();
  static const QRegularExpression braced(QStringLiteral("([_^])\\{([^{}]*)\\}"));
  static const QRegularExpression bare(QStringLiteral("([_^])([A-Za-z0-9]+|−?[A-Za-z0-9]+)"));
  for (const QRegularExpression* re : {&braced, &bare}) {
    QString out;
    qsizetype last = 0;
    for (auto it = re->globalMatch(html); it.hasNext();) {
      const QRegularExpressionMatch m = it.next();
      const QString tag = m.captured(1) == QLatin1String("_") ? QStringLiteral("sub") : QStringLiteral("sup");
      out += html.mid(last, m.capturedStart() - last) + QStringLiteral("<%1>%2</%1>").arg(tag, m.captured(2));
      last = m.capturedEnd();
    }
    html = out + html.mid(last);
  }
  return html;
}

namespace {

QString mixers_html(const hsm::ModelConfig& model) {
  QString html = QObject::tr("<h3>The current run's mixers (its model: %1)</h3>").arg(qstr(model.name).toHtmlEscaped());
  std::set<std::string> seen;
  int layer = 0;
  for (const hsm::LayerSpec& l : model.layers) {
    ++layer;
    if (!seen.insert(l.mixer).second || !hsm::is_mixer_id(l.mixer)) continue;
    const hsm::MixerInfo& m = hsm::mixer_info(l.mixer);
    html += QObject::tr("<p><b>%1</b> (%2, from layer %3):<br>%4</p>")
                .arg(QString::fromUtf8(m.title).toHtmlEscaped(), QString::fromUtf8(m.equation).toHtmlEscaped())
                .arg(layer - 1)
                .arg(formulaHtml(QString::fromUtf8(m.formula)));
  }
  return html;
}

}  // namespace

QString viewTitle(const ViewEntry* view) {
  if (view) return view->tabTitle();
  return QObject::tr("Start page");
}

QString viewHelpHtml(const ViewEntry* entry, const hsm::ModelConfig* model) {
  const int extras = entry ? entry->helpExtras : ViewEntry::kNoExtra;
  QString html = QObject::tr("<h2>%1: what am I looking at?</h2>").arg(viewTitle(entry));
  html += entry ? entry->helpBody() : QCoreApplication::translate("help", kStartBody);
  // The Lab and Experiments views show grids of their own models, not the current run's.
  if (model && (!entry || (extras & ViewEntry::kCurrentRunsMixers))) html += mixers_html(*model);
  html += QObject::tr("<h3>Words</h3><p>%1</p><p>%2</p><p>%3</p><p>%4</p>")
              .arg(termToolTip(Term::kReceptiveField).toHtmlEscaped(), termToolTip(Term::kShift).toHtmlEscaped(),
                   termToolTip(Term::kWeightA).toHtmlEscaped(), termToolTip(Term::kWeightB).toHtmlEscaped());
  if (extras & ViewEntry::kIndicators)
    html += QStringLiteral("<p>") +
            indicatorsToolTip().toHtmlEscaped().replace(QLatin1Char('\n'), QStringLiteral("<br>")) +
            QStringLiteral("</p>");
  return html;
}

HelpPanel::HelpPanel(const std::vector<ViewEntry>& views, QWidget* parent) : QDialog(parent), views_(views) {
  setObjectName(QStringLiteral("help_panel"));
  setWindowTitle(tr("What am I looking at?"));
  browser_ = new QTextBrowser;
  browser_->setObjectName(QStringLiteral("help_text"));
  browser_->setOpenExternalLinks(false);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(browser_);
  resize(460, 560);
  // F1 toggles the help from its own window too: under a window manager the panel takes the
  // focus when it opens, and the main window's F1 never reached it (issue 69).
  auto* close = new QShortcut(QKeySequence::HelpContents, this);
  connect(close, &QShortcut::activated, this, &QWidget::hide);
}

void HelpPanel::showHelp(int view, const hsm::ModelConfig* model) {
  view_ = view;
  const bool known = view >= 0 && view < static_cast<int>(views_.size());
  browser_->setHtml(viewHelpHtml(known ? &views_[static_cast<size_t>(view)] : nullptr, model));
}

QString HelpPanel::text() const { return browser_->toPlainText(); }

namespace {

void collect(const QMenu* menu, const QString& path, QStringList& rows) {
  for (QAction* a : menu->actions()) {
    const QString name = path + a->text().remove(QLatin1Char('&'));
    if (a->menu())
      collect(a->menu(), name + QStringLiteral(" › "), rows);
    else if (!a->shortcut().isEmpty())
      rows << QStringLiteral("<tr><td>%1</td><td><b>%2</b></td></tr>")
                  .arg(name.toHtmlEscaped(), a->shortcut().toString(QKeySequence::NativeText).toHtmlEscaped());
  }
}

}  // namespace

QString shortcutsHtml(const QMenuBar* menus) {
  QStringList rows;
  for (QAction* a : menus->actions())
    if (a->menu()) collect(a->menu(), a->text().remove(QLatin1Char('&')) + QStringLiteral(" › "), rows);
  const QPair<QString, QString> own[] = {
      {QObject::tr("Playground › Generate"), QObject::tr("Ctrl+Return")},
      {QObject::tr("Playground › Stop"), QObject::tr("Esc")},
      {QObject::tr("Playground and presentation › Larger / smaller text"),
       QObject::tr("Ctrl++ / Ctrl+- (or Ctrl+wheel)")},
      {QObject::tr("Presentation › New story"), QObject::tr("Space or N")},
      {QObject::tr("Presentation › Next / previous model"), QObject::tr("Page Down / Page Up")},
      {QObject::tr("Presentation › Leave"), QObject::tr("Esc or F11")},
  };
  for (const auto& [name, keys] : own)
    rows << QStringLiteral("<tr><td>%1</td><td><b>%2</b></td></tr>").arg(name.toHtmlEscaped(), keys.toHtmlEscaped());
  return QObject::tr("<h3>Keyboard shortcuts</h3><table cellspacing='4'>%1</table>").arg(rows.join(QString()));
}

}  // namespace studio::help
