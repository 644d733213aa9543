#include "gui/views/experiment_table.h"

#include <QLocale>
#include <QMap>
#include <QObject>
#include <cmath>
#include <set>

#include "gui/engine_types.h"
#include "gui/widgets/colour_maps.h"
#include "hsm/settings.h"

namespace studio {
namespace {

// A setting's compact JSON as shown: strings without their quotes.
QString setting_text(const std::string& json) {
  if (json.size() >= 2 && json.front() == '"' && json.back() == '"') return qstr(json.substr(1, json.size() - 2));
  return qstr(json);
}

// A standard deviation: two significant digits, hundreds and more whole ("230", "0.012").
QString std_text(double x) {
  if (!std::isfinite(x)) return QString();
  return std::abs(x) >= 100 ? QLocale().toString(x, 'f', 0) : QString::number(x, 'g', 2);
}

QString count_text(double x) { return std::isfinite(x) ? QLocale().toString(static_cast<qint64>(x)) : QString(); }

std::string setting_of(const hsm::SweepRow& r, const QString& name) {
  for (const auto& [a, v] : r.settings)
    if (qstr(a) == name) return v;
  return {};
}

// The setting columns (numeric when every value is a number) of `names` over `rows`.
void add_setting_columns(ExperimentTable& t, const QStringList& names, const std::vector<hsm::SweepRow>& rows) {
  for (const QString& name : names) {
    bool numeric = true;
    for (const hsm::SweepRow& r : rows) {
      bool ok = false;
      qstr(setting_of(r, name)).toDouble(&ok);
      numeric = numeric && ok;
    }
    t.columns.push_back({name, true, numeric});
  }
}

void add_cell(ExperimentTable& t, double number, const QString& text, double std = NAN) {
  t.numbers.back().push_back(number);
  t.texts.back().push_back(text);
  t.stds.back().push_back(std);
}

void add_setting_cells(ExperimentTable& t, const QStringList& names,
                       const std::vector<std::pair<std::string, std::string>>& settings) {
  for (const QString& name : names) {
    std::string v;
    for (const auto& [a, value] : settings)
      if (qstr(a) == name) v = value;
    bool ok = false;
    const double x = qstr(v).toDouble(&ok);
    add_cell(t, ok ? x : NAN, setting_text(v));
  }
}

void new_row(ExperimentTable& t) {
  t.numbers.push_back({});
  t.texts.push_back({});
  t.stds.push_back({});
}

}  // namespace

QString short_setting(const QString& path) {
  QStringList parts = path.split(QLatin1Char('.'));
  if (parts.size() == 4 && parts[0] == QLatin1String("model") && parts[1] == QLatin1String("layers"))
    return parts[3] + (parts[2] == QLatin1String("*") ? QStringLiteral("_all") : parts[2]);
  if (parts.size() > 1 && (parts[0] == QLatin1String("model") || parts[0] == QLatin1String("train")))
    parts.removeFirst();
  return parts.join(QLatin1Char('.'));
}

namespace {

QString words(QString key) { return key.replace(QLatin1Char('_'), QLatin1Char(' ')); }

// A layer field in words: "mixer", "MLP width", "heads".
QString layer_field(const QString& field) {
  if (field == QLatin1String("ffn")) return QObject::tr("MLP width");
  return words(field);
}

}  // namespace

QString setting_title(const QString& path) {
  const QStringList parts = path.split(QLatin1Char('.'));
  if (parts.size() == 4 && parts[0] == QLatin1String("model") && parts[1] == QLatin1String("layers"))
    return parts[2] == QLatin1String("*") ? QObject::tr("%1, every layer").arg(layer_field(parts[3]))
                                          : QObject::tr("%1, layer %2").arg(layer_field(parts[3]), parts[2]);
  if (parts.size() == 3 && parts[0] == QLatin1String("model") && parts[1] == QLatin1String("layers"))
    return QObject::tr("%1 per layer").arg(layer_field(parts[2]));
  if (parts.size() == 2 && parts[0] == QLatin1String("model")) {
    static const QMap<QString, QString> fields = {{QStringLiteral("d_model"), QObject::tr("model width")},
                                                  {QStringLiteral("context"), QObject::tr("context length")},
                                                  {QStringLiteral("vocab_size"), QObject::tr("vocabulary size")},
                                                  {QStringLiteral("init"), QObject::tr("initialisation")},
                                                  {QStringLiteral("name"), QObject::tr("model name")}};
    return fields.value(parts[1], words(parts[1]));
  }
  if (parts.size() == 2 && parts[0] == QLatin1String("train")) {
    try {
      QString label = QString::fromUtf8(hsm::train_setting(parts[1].toStdString()).label);
      if (label.size() > 1 && label[1].isLower()) label[0] = label[0].toLower();  // "Batch size" -> "batch size"; "AdamW beta1" kept
      return label;
    } catch (const std::exception&) {
      return words(parts[1]);
    }
  }
  return words(short_setting(path));
}

QString metric_title(const QString& name) {
  static const QMap<QString, QString> metrics = {{column::kMacs, QObject::tr("multiply-adds per token")},
                                                 {column::kFinalLoss, QObject::tr("validation loss (final)")},
                                                 {column::kBestLoss, QObject::tr("validation loss (best)")},
                                                 {column::kFinalAccuracy, QObject::tr("validation accuracy (final)")},
                                                 {column::kBestAccuracy, QObject::tr("validation accuracy (best)")},
                                                 {column::kTokensPerS, QObject::tr("tokens per second")},
                                                 {column::kWall, QObject::tr("wall time (s)")}};
  return metrics.value(name, name);
}

QString column_title(const ExperimentColumn& c) { return c.setting ? setting_title(c.name) : metric_title(c.name); }

QString number_text(double x) {
  if (!std::isfinite(x)) return QString();
  if (std::abs(x) >= 1000) return QLocale().toString(x, 'f', 0);
  return QString::number(x, 'g', 4);
}

int ExperimentTable::columnOf(const QString& name) const {
  for (int i = 0; i < columns.size(); ++i)
    if (columns[i].name == name) return i;
  return -1;
}

QStringList differing_settings(const std::vector<hsm::SweepRow>& rows) {
  QStringList names;
  for (const hsm::SweepRow& r : rows)
    for (const auto& [a, v] : r.settings)
      if (!names.contains(qstr(a))) names << qstr(a);
  QStringList differing;
  for (const QString& name : names) {
    std::set<std::string> values;
    for (const hsm::SweepRow& r : rows) values.insert(setting_of(r, name));
    if (values.size() > 1) differing << name;
  }
  return differing;
}

ExperimentTable experiment_table(const std::vector<hsm::SweepRow>& rows) {
  ExperimentTable t;
  const QStringList settings = differing_settings(rows);
  t.columns.push_back({column::kRun, false, false});
  add_setting_columns(t, settings, rows);
  for (const QString& name : {column::kParams, column::kMacs, column::kFinalLoss, column::kBestLoss,
                              column::kFinalAccuracy, column::kBestAccuracy, column::kTokensPerS, column::kWall,
                              column::kStep})
    t.columns.push_back({name, false, true});
  t.columns.push_back({column::kState, false, false});
  for (const hsm::SweepRow& r : rows) {
    new_row(t);
    add_cell(t, NAN, qstr(r.run));
    add_setting_cells(t, settings, r.settings);
    add_cell(t, static_cast<double>(r.params), count_text(static_cast<double>(r.params)));
    add_cell(t, static_cast<double>(r.macs_per_token), count_text(static_cast<double>(r.macs_per_token)));
    for (double x : {r.final_val_loss, r.best_val_loss, r.final_accuracy, r.best_accuracy})
      add_cell(t, x, number_text(x));
    add_cell(t, r.tokens_per_s, number_text(r.tokens_per_s));
    add_cell(t, r.wall_s, number_text(r.wall_s));
    add_cell(t, static_cast<double>(r.step),
             r.total_steps > 0 ? QStringLiteral("%1/%2").arg(r.step).arg(r.total_steps) : QString::number(r.step));
    add_cell(t, NAN, qstr(r.state));
    t.runs.push_back({qstr(r.run)});
    t.tooltips.push_back(r.error.empty() ? QString() : qstr(r.error));
  }
  return t;
}

ExperimentTable grouped_table(const std::vector<hsm::SweepRow>& rows, const std::string& setting) {
  const std::vector<hsm::SweepGroup> groups = hsm::group_sweep_rows(rows, setting);
  ExperimentTable t;
  QStringList settings = differing_settings(rows);
  settings.removeAll(qstr(setting));
  add_setting_columns(t, settings, rows);
  t.columns.push_back({column::kRuns, false, true});
  const QString names[] = {column::kFinalLoss, column::kBestLoss, column::kFinalAccuracy,
                           column::kBestAccuracy, column::kTokensPerS, column::kWall};
  for (const QString& name : names) t.columns.push_back({name, false, true});
  for (const hsm::SweepGroup& g : groups) {
    new_row(t);
    add_setting_cells(t, settings, g.settings);
    add_cell(t, static_cast<double>(g.runs.size()), QString::number(g.runs.size()));
    for (const hsm::SweepStat* s : {&g.final_val_loss, &g.best_val_loss, &g.final_accuracy, &g.best_accuracy,
                                    &g.tokens_per_s, &g.wall_s}) {
      const QString text = s->n == 0 ? QString()
                                     : QStringLiteral("%1 ± %2 (n %3)")
                                           .arg(number_text(s->mean), std_text(s->std))
                                           .arg(s->n);
      add_cell(t, s->mean, text, s->std);
    }
    QStringList runs;
    for (const std::string& r : g.runs) runs << qstr(r);
    t.runs.push_back(runs);
    t.tooltips.push_back(runs.join(QLatin1Char('\n')));
  }
  return t;
}

void ExperimentModel::setTable(ExperimentTable table) {
  beginResetModel();
  table_ = std::move(table);
  endResetModel();
}

int ExperimentModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(table_.texts.size());
}

int ExperimentModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(table_.columns.size());
}

QVariant ExperimentModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const int r = index.row(), c = index.column();
  const ExperimentColumn& col = table_.columns[c];
  switch (role) {
    case Qt::DisplayRole:
      return table_.texts[r][c];
    case kValueRole:
      return col.numeric ? QVariant(table_.numbers[r][c]) : QVariant(table_.texts[r][c]);
    case Qt::TextAlignmentRole:
      return col.numeric ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant(Qt::AlignLeft | Qt::AlignVCenter);
    case Qt::ToolTipRole:  // a failed run's error, a group's runs; else a long name in full
      if (!table_.tooltips[r].isEmpty()) return table_.tooltips[r];
      return col.numeric ? QVariant() : QVariant(table_.texts[r][c]);
    case Qt::ForegroundRole:
      if (col.name == column::kState && table_.texts[r][c] == QLatin1String("failed")) return colours::rdbuRed();
      return {};
    default:
      return {};
  }
}

QVariant ExperimentModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= table_.columns.size()) return {};
  const ExperimentColumn& c = table_.columns[section];
  if (role == Qt::DisplayRole) return column_title(c);
  if (role == Qt::ToolTipRole)
    return c.setting ? tr("%1 (%2): a setting that differs between the runs").arg(column_title(c), c.name)
                     : tr("%1 (%2 in the exported table)").arg(column_title(c), c.name);
  return {};
}

ExperimentFilter::ExperimentFilter(QObject* parent) : QSortFilterProxyModel(parent) {
  setSortRole(ExperimentModel::kValueRole);
}

void ExperimentFilter::setText(const QString& text) {
  words_ = text.split(QLatin1Char(' '), Qt::SkipEmptyParts);
  invalidateFilter();
}

void ExperimentFilter::setAllowed(const QVector<bool>& allowed) {
  allowed_ = allowed;
  invalidateFilter();
}

bool ExperimentFilter::filterAcceptsRow(int row, const QModelIndex& parent) const {
  if (row < allowed_.size() && !allowed_[row]) return false;
  const QAbstractItemModel* m = sourceModel();
  for (const QString& word : words_) {
    bool found = false;
    for (int c = 0; c < m->columnCount(parent) && !found; ++c)
      found = m->index(row, c, parent).data().toString().contains(word, Qt::CaseInsensitive);
    if (!found) return false;
  }
  return true;
}

bool ExperimentFilter::lessThan(const QModelIndex& left, const QModelIndex& right) const {
  const QVariant a = left.data(sortRole()), b = right.data(sortRole());
  if (a.typeId() == QMetaType::Double && b.typeId() == QMetaType::Double) {
    const double x = a.toDouble(), y = b.toDouble();
    // A missing value sorts last in ascending order.
    if (std::isnan(x) || std::isnan(y)) return !std::isnan(x) && std::isnan(y);
    return x < y;
  }
  return QString::localeAwareCompare(a.toString(), b.toString()) < 0;
}

}  // namespace studio
