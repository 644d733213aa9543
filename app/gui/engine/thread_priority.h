#pragma once
// The engine threads run "nicer" than the GUI thread: on a 2-core laptop a training run and
// a generation would otherwise take the CPU from the event loop, and the window would lag.
namespace studio {

// Lowers the calling thread's CPU priority (Linux: nice +5 for this thread alone; threads
// it starts later, LibTorch's and OpenBLAS's pools among them, inherit it). Returns false
// where the platform does not allow it; the studio works either way.
bool lower_current_thread_priority();

}  // namespace studio
