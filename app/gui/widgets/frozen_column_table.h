#pragma once
// A table whose first column stays in view while the others scroll sideways (issue 48: the
// Experiments table's run names went out of view when it scrolled right to the losses). A
// second view over the same model and selection shows column 0 above the left edge, scrolled
// with the table; clicking its header sorts the table by that column.
#include <QTableView>

namespace studio {

class FrozenColumnTable : public QTableView {
  Q_OBJECT
 public:
  explicit FrozenColumnTable(QWidget* parent = nullptr);
  void setModel(QAbstractItemModel* model) override;
  // The view that holds the first column (for tests).
  QTableView* frozenView() const { return frozen_; }

 protected:
  void resizeEvent(QResizeEvent* event) override;
  void scrollTo(const QModelIndex& index, ScrollHint hint = EnsureVisible) override;
  void updateGeometries() override;

 private:
  void followModel();  // only column 0 shown, as wide as the table's
  void placeFrozen();

  QTableView* frozen_;
};

}  // namespace studio
