#include "gui/widgets/glossary.h"

#include <QComboBox>
#include <QHash>
#include <QLocale>
#include <QTableWidget>
#include <set>

#include "gui/engine_types.h"
#include "hsm/mixer_kind.h"
#include "hsm/params.h"
#include "hsm/presets.h"

namespace studio::help {

QString indicatorToolTip(const QString& name) {
  QString base = name;
  const bool normalised = base.endsWith(QLatin1String(" (norm)"));
  if (normalised) base.chop(7);
  QString tip;
  if (base == QLatin1String("ENTROPY"))
    tip = QObject::tr(
        "ENTROPY: how evenly each token spreads its weight over the earlier tokens; high means close "
        "to plain averaging (DA §4.4: H = −Σ a·ln a).");
  else if (base == QLatin1String("CONC"))
    tip = QObject::tr(
        "CONC (concentration): how much the weight piles up on a few tokens; high means a sharp, "
        "focused pattern (DA §4.4: the Frobenius norm ‖A‖).");
  else if (base == QLatin1String("HEADDIV"))
    tip = QObject::tr(
        "HEADDIV (head diversity): how differently the heads of a layer look at the text; 0 for a "
        "layer with one head (DA §4.4: the mean spread across heads).");
  else if (base == QLatin1String("SINK"))
    tip = QObject::tr(
        "SINK (attention sink): how much weight goes to the very first token on average; high means "
        "the layer parks its attention there (DA §4.4).");
  else if (base.startsWith(QLatin1String("LocFoc")) && base.size() == 7 && base[6].isDigit())
    tip = QObject::tr(
              "LocFoc%1 (local focus): the average weight a token gives the token %2 (DA §4.4); high means "
              "the layer looks there.")
              .arg(base[6])
              .arg(base[6] == QLatin1Char('0')   ? QObject::tr("itself")
                   : base[6] == QLatin1Char('1') ? QObject::tr("just before it")
                                                 : QObject::tr("%1 places back").arg(base[6]));
  else
    return {};
  if (normalised)
    tip += QObject::tr(
        " Normalised: min-max scaled across the model's layers, 0 the lowest layer, 1 the highest "
        "(DA footnote 3).");
  return tip;
}

QString indicatorsToolTip() {
  QStringList lines;
  for (const char* name : {"ENTROPY", "CONC", "HEADDIV", "SINK", "LocFoc0", "LocFoc1", "LocFoc2", "LocFoc3"})
    lines << indicatorToolTip(QString::fromLatin1(name));
  return lines.join(QLatin1Char('\n'));
}

void setIndicatorToolTips(QTableWidget* table) {
  for (int c = 0; c < table->columnCount(); ++c)
    if (QTableWidgetItem* item = table->horizontalHeaderItem(c)) {
      const QString tip = indicatorToolTip(item->text());
      if (!tip.isEmpty()) item->setToolTip(tip);
    }
}

void setIndicatorToolTips(QComboBox* box) {
  for (int i = 0; i < box->count(); ++i) {
    const QString tip = indicatorToolTip(box->itemText(i));
    if (!tip.isEmpty()) box->setItemData(i, tip, Qt::ToolTipRole);
  }
}

QString termToolTip(Term term) {
  switch (term) {
    case Term::kReceptiveField:
      return QObject::tr(
          "Receptive field: the earlier tokens whose information can reach a position after a given "
          "layer. In HSM layer 0 mixes each token with the one 1 place back, layer 1 with the one 2 back, "
          "then 4, 8, …, so after L layers a token can draw on the last 2 to the power L tokens (HSM §3, Fig. 4).");
    case Term::kShift:
      return QObject::tr(
          "s = the shift: how many places back a layer's second input, the shifted x, comes from; "
          "in HSM it doubles from layer to layer: 1, 2, 4, 8, … Why powers of two: every offset "
          "is a sum of distinct powers of two, so log2 T layers reach every earlier token, each by one path.");
    case Term::kWeightA:
      return QObject::tr("a: the learned weight on the token itself, x, in y = a·x + b·x_shifted (HSM eq. 1)");
    case Term::kWeightB:
      return QObject::tr(
          "b: the learned weight on the earlier token, x_shifted (s places back), in y = a·x + "
          "b·x_shifted (HSM eq. 1)");
  }
  return {};
}

namespace {

// The papers a configuration's mixers come from, by their registry entries' families.
QString papers_of(const hsm::ModelConfig& c) {
  std::set<hsm::MixerFamily> families;
  for (const hsm::LayerSpec& l : c.layers) families.insert(hsm::mixer_info(l.mixer).family);
  QStringList names;
  for (hsm::MixerFamily f : families) switch (f) {
      case hsm::MixerFamily::kAttention:
        names << QObject::tr("GPT softmax attention (the HSM paper's baseline)");
        break;
      case hsm::MixerFamily::kShift:
        names << QObject::tr("Hierarchical Shift Mixing (HSM)");
        break;
      case hsm::MixerFamily::kDeconstructedAttention:
        names << QObject::tr("Deconstructing Attention (DA)");
        break;
      case hsm::MixerFamily::kExtractor:
        names << QObject::tr("Extractors (EX)");
        break;
    }
  return names.join(QStringLiteral(" + "));
}

}  // namespace

QString presetToolTip(const QString& name) {
  // Read once per process: a preset box asks for every name, and three boxes share them.
  static QHash<QString, QString> cache;
  if (auto it = cache.constFind(name); it != cache.constEnd()) return *it;
  QString tip;
  try {
    const hsm::ModelConfig c = hsm::load_preset(sstr(name));
    tip = QObject::tr("<b>%1</b>: %2<br>Paper: %3<br>%4 parameters · %5 layers · d = %6 · context %7")
              .arg(name.toHtmlEscaped(), qstr(c.description).toHtmlEscaped(), papers_of(c).toHtmlEscaped(),
                   QLocale().toString(static_cast<qlonglong>(hsm::count_params(c).total())))
              .arg(c.layers.size())
              .arg(c.d_model)
              .arg(c.context);
  } catch (const std::exception&) {
    // Not a preset (a config file's path in the box): no tooltip.
  }
  cache.insert(name, tip);
  return tip;
}

void setPresetToolTips(QComboBox* box) {
  for (int i = 0; i < box->count(); ++i) {
    QString tip = presetToolTip(box->itemData(i).toString());
    if (tip.isEmpty()) tip = presetToolTip(box->itemText(i));
    if (!tip.isEmpty()) box->setItemData(i, tip, Qt::ToolTipRole);
  }
  // The closed box shows the chosen preset's tooltip too, not only its open list.
  auto follow = [box] { box->setToolTip(box->currentData(Qt::ToolTipRole).toString()); };
  QObject::connect(box, &QComboBox::currentIndexChanged, box, follow);
  follow();
}

}  // namespace studio::help
