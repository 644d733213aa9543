#include "gui/widgets/frozen_column_table.h"

#include <QHeaderView>
#include <QScrollBar>

namespace studio {

FrozenColumnTable::FrozenColumnTable(QWidget* parent) : QTableView(parent), frozen_(new QTableView(this)) {
  frozen_->setObjectName(QStringLiteral("frozen_column"));
  frozen_->setFocusPolicy(Qt::NoFocus);
  frozen_->setFrameShape(QFrame::NoFrame);
  frozen_->verticalHeader()->hide();
  frozen_->horizontalHeader()->setSectionResizeMode(QHeaderView::Fixed);
  frozen_->horizontalHeader()->setSortIndicatorShown(true);
  frozen_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  frozen_->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  frozen_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  viewport()->stackUnder(frozen_);
  // A line at its right edge: where the scrolled columns pass beneath it.
  frozen_->setStyleSheet(QStringLiteral("QTableView { border-right: 1px solid palette(mid); }"));

  connect(horizontalHeader(), &QHeaderView::sectionResized, this, [this](int column, int, int size) {
    if (column != 0) return;
    frozen_->setColumnWidth(0, size);
    placeFrozen();
  });
  connect(verticalHeader(), &QHeaderView::sectionResized, this,
          [this](int row, int, int size) { frozen_->setRowHeight(row, size); });
  connect(frozen_->verticalScrollBar(), &QAbstractSlider::valueChanged, verticalScrollBar(), &QAbstractSlider::setValue);
  connect(verticalScrollBar(), &QAbstractSlider::valueChanged, frozen_->verticalScrollBar(), &QAbstractSlider::setValue);
  // Its header sorts the table as the table's own would.
  connect(frozen_->horizontalHeader(), &QHeaderView::sectionClicked, this, [this](int column) {
    if (!isSortingEnabled()) return;
    const QHeaderView* h = horizontalHeader();
    const bool again = h->sortIndicatorSection() == column && h->sortIndicatorOrder() == Qt::AscendingOrder;
    sortByColumn(column, again ? Qt::DescendingOrder : Qt::AscendingOrder);
  });
  connect(horizontalHeader(), &QHeaderView::sortIndicatorChanged, this, [this](int column, Qt::SortOrder order) {
    frozen_->horizontalHeader()->setSortIndicator(column == 0 ? 0 : -1, order);
  });
}

void FrozenColumnTable::setModel(QAbstractItemModel* model) {
  QTableView::setModel(model);
  frozen_->setModel(model);
  frozen_->setSelectionModel(selectionModel());
  if (model) {
    connect(model, &QAbstractItemModel::modelReset, this, &FrozenColumnTable::followModel);
    connect(model, &QAbstractItemModel::layoutChanged, this, &FrozenColumnTable::followModel);
    connect(model, &QAbstractItemModel::columnsInserted, this, &FrozenColumnTable::followModel);
    connect(model, &QAbstractItemModel::rowsInserted, this, &FrozenColumnTable::followModel);
  }
  followModel();
}

void FrozenColumnTable::followModel() {
  frozen_->setSelectionBehavior(selectionBehavior());
  frozen_->setSelectionMode(selectionMode());
  frozen_->setAlternatingRowColors(alternatingRowColors());
  frozen_->verticalHeader()->setDefaultSectionSize(verticalHeader()->defaultSectionSize());
  const int columns = model() ? model()->columnCount() : 0;
  for (int c = 0; c < columns; ++c) frozen_->setColumnHidden(c, c != 0);
  if (columns > 0) frozen_->setColumnWidth(0, columnWidth(0));
  placeFrozen();
}

void FrozenColumnTable::placeFrozen() {
  const bool show = model() && model()->columnCount() > 1 && !isColumnHidden(0);
  frozen_->setVisible(show);
  if (!show) return;
  frozen_->setGeometry(!verticalHeader()->isHidden() ? verticalHeader()->width() + frameWidth() : frameWidth(),
                       frameWidth(), columnWidth(0), viewport()->height() + horizontalHeader()->height());
  frozen_->verticalScrollBar()->setValue(verticalScrollBar()->value());
}

void FrozenColumnTable::resizeEvent(QResizeEvent* event) {
  QTableView::resizeEvent(event);
  placeFrozen();
}

void FrozenColumnTable::updateGeometries() {
  QTableView::updateGeometries();
  placeFrozen();
}

// A cell to the right is scrolled into view beside the frozen column, never beneath it.
void FrozenColumnTable::scrollTo(const QModelIndex& index, ScrollHint hint) {
  if (index.column() > 0) {
    QTableView::scrollTo(index, hint);
    const int left = columnViewportPosition(index.column());
    if (left < columnWidth(0))
      horizontalScrollBar()->setValue(horizontalScrollBar()->value() + left - columnWidth(0));
  } else {  // the row only: the columns stay where the user scrolled them
    const int across = horizontalScrollBar()->value();
    QTableView::scrollTo(index, hint);
    horizontalScrollBar()->setValue(across);
  }
}

}  // namespace studio
