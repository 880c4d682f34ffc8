#include <atomic>

#include "common.hpp"

namespace icl {
namespace {
std::atomic<int> threads{1};
}
int num_threads() { return threads.load(); }
void set_num_threads(int n) { threads.store(n < 1 ? 1 : n); }
}  // namespace icl
