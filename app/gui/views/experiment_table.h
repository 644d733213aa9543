#pragma once
// The Experiments view's table (issue 39, docs/sweeps.md "In the studio"), as data and as a Qt
// model: a row per run of a sweep (hsm::sweep_table) or per group of runs that differ only in
// one setting (hsm::group_sweep_rows: mean ± std), with only the settings that differ, and a
// proxy that sorts by value (numbers as numbers, missing ones last) and filters by text and by
// the rows the parallel-coordinates brushes let through.
#include <QAbstractTableModel>
#include <QSortFilterProxyModel>
#include <QString>
#include <QStringList>
#include <QVector>
#include <string>
#include <vector>

#include "hsm/sweep.h"

namespace studio {

struct ExperimentColumn {
  QString name;          // the header ("best val_loss", "mixer0")
  bool setting = false;  // one of the settings that differ
  bool numeric = false;  // every value a number (NaN: none)
};

struct ExperimentTable {
  QVector<ExperimentColumn> columns;
  // Per row, per column: the number (numeric columns; NaN: none) and the text shown.
  QVector<QVector<double>> numbers;
  QVector<QStringList> texts;
  QVector<QVector<double>> stds;  // a grouped table's standard deviations (NaN elsewhere)
  QVector<QStringList> runs;  // the runs each row stands for (one, or a group's)
  QStringList tooltips;       // per row: a failed run's error, a group's runs
  int columnOf(const QString& name) const;
};

// Column names of the metrics, as the table's headers and the plots' axes.
namespace column {
inline const QString kRun = QStringLiteral("run");
inline const QString kRuns = QStringLiteral("runs");
inline const QString kParams = QStringLiteral("parameters");
inline const QString kMacs = QStringLiteral("MACs/token");
inline const QString kFinalLoss = QStringLiteral("final val_loss");
inline const QString kBestLoss = QStringLiteral("best val_loss");
inline const QString kFinalAccuracy = QStringLiteral("final accuracy");
inline const QString kBestAccuracy = QStringLiteral("best accuracy");
inline const QString kTokensPerS = QStringLiteral("tokens/s");
inline const QString kWall = QStringLiteral("wall s");
inline const QString kStep = QStringLiteral("step");
inline const QString kState = QStringLiteral("state");
}  // namespace column

// A setting's short name, as a sweep's run names have it: "model.layers.1.mixer" -> "mixer1",
// "model.layers.*.ffn" -> "ffn_all", "train.lr" -> "lr", "model.placement" -> "placement".
QString short_setting(const QString& path);
// A column as people read it (issue 69: the headers and axes were the CSV's keys, "final val_loss",
// "layers.ffn"): metrics in words ("validation loss (final)"), settings by what they set ("MLP
// width per layer", "learning rate", "mixer, layer 1"). The key stays the column's name: the
// CSV's header, the tooltip, what brushes and lookups use.
QString setting_title(const QString& path);
QString metric_title(const QString& name);
QString column_title(const ExperimentColumn& c);
// A number as the table and the plots show it: thousands as whole numbers ("183,245"), others
// to 4 significant digits.
QString number_text(double x);

// The settings that differ between the rows, in the order they first appear.
QStringList differing_settings(const std::vector<hsm::SweepRow>& rows);
// A row per run: run, the settings that differ, parameters, MACs/token, final and best
// val_loss and accuracy, tokens/s, wall s, step, state.
ExperimentTable experiment_table(const std::vector<hsm::SweepRow>& rows);
// A row per group of runs that differ only in `setting`: the other settings, runs (n), then
// each metric's mean (numbers) shown as "mean ± std".
ExperimentTable grouped_table(const std::vector<hsm::SweepRow>& rows, const std::string& setting);

class ExperimentModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  using QAbstractTableModel::QAbstractTableModel;
  static constexpr int kValueRole = Qt::UserRole;  // the number (numeric columns) or the text: what sorts

  void setTable(ExperimentTable table);
  const ExperimentTable& table() const { return table_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  ExperimentTable table_;
};

class ExperimentFilter : public QSortFilterProxyModel {
  Q_OBJECT
 public:
  explicit ExperimentFilter(QObject* parent = nullptr);
  // Every word must be in some cell of a row ("hsm_ab done"); case-insensitive.
  void setText(const QString& text);
  // The source rows the brushes let through (empty: all).
  void setAllowed(const QVector<bool>& allowed);

 protected:
  bool filterAcceptsRow(int row, const QModelIndex& parent) const override;
  bool lessThan(const QModelIndex& left, const QModelIndex& right) const override;

 private:
  QStringList words_;
  QVector<bool> allowed_;
};

}  // namespace studio
