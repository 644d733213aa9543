#pragma once
// Small makers the views' build() methods share, so that a build() reads as the list of what it
// shows: a named button with its tooltip, a row of widgets.
#include <QList>
#include <QString>

class QHBoxLayout;
class QPushButton;
class QWidget;

namespace studio {

// A push button with this text, object name and tooltip (none when empty).
QPushButton* makeButton(const QString& text, const QString& objectName, const QString& toolTip = {});
// A row of these widgets, left to right; those in `stretched` take the spare width (stretch 1).
QHBoxLayout* makeRow(const QList<QWidget*>& widgets, const QList<QWidget*>& stretched = {});

}  // namespace studio
