#pragma once
// The studio's words, defined once (issue 36, "it explains itself"): the diagnostics
// indicators (DA §4.4, one sentence each), the terms of the receptive field and of the HSM
// weights, and every preset (what it is, which paper, how many parameters). Views attach
// these as tooltips with one call; the help panel and the tour quote the same sentences.
#include <QString>
#include <QStringList>

class QComboBox;
class QTableWidget;

namespace studio::help {

// One indicator's meaning (DA §4.4), for a table header or a legend: "ENTROPY", "CONC",
// "HEADDIV", "SINK", "LocFoc0".."LocFoc3", each also with a " (norm)" suffix. Empty for
// any other name.
QString indicatorToolTip(const QString& name);
// Every indicator, one line each (for a chart that draws them all).
QString indicatorsToolTip();
// Sets the tooltip of every header of `table` (and of every item of `box`) that names an
// indicator.
void setIndicatorToolTips(QTableWidget* table);
void setIndicatorToolTips(QComboBox* box);

enum class Term { kReceptiveField, kShift, kWeightA, kWeightB };
QString termToolTip(Term term);

// A preset's tooltip: its description, the paper it comes from and its parameter count.
// Empty when `name` is no preset.
QString presetToolTip(const QString& name);
// Sets the tooltip of every item of a preset box (item text or data = the preset's name).
void setPresetToolTips(QComboBox* box);

}  // namespace studio::help
