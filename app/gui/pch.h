// Precompiled header of the GUI library: Qt Widgets and QCustomPlot are large and every
// view includes them. No LibTorch here or anywhere in app/ (SPEC §1).
#pragma once
#include <QtWidgets>
#include <qcustomplot.h>
