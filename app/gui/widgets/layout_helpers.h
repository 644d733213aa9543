#pragma once
// Small makers the views' build() methods share, so that a build() reads as the list of what it
// shows: a named button with its tooltip, a row of widgets.
#include <QList>
#include <QString>

class QHBoxLayout;
class QPushButton;
class QScrollArea;
class QWidget;

namespace studio {

// A push button with this text, object name and tooltip (none when empty).
QPushButton* makeButton(const QString& text, const QString& objectName, const QString& toolTip = {});
// A row of these widgets, left to right; those in `stretched` take the spare width (stretch 1).
QHBoxLayout* makeRow(const QList<QWidget*>& widgets, const QList<QWidget*>& stretched = {});
// `content` in a frameless scroll area that gives it all its room and scrolls only when the
// window is shorter (or narrower) than the content's smallest size: a long form or a stack of
// plots no longer sets the window's smallest height (issue 48: 1024x600 under a window manager
// leaves about 540 px). The view's action buttons belong outside it, always in view.
QScrollArea* scrollWhenShort(QWidget* content, Qt::ScrollBarPolicy horizontal = Qt::ScrollBarAsNeeded);

}  // namespace studio
