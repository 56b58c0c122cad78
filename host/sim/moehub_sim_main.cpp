// moehub-sim: command-line front end of the SystemC multi-GPU MoE simulator.
#include <cstdio>
int main() {
  std::puts("moehub-sim: under construction");
  return 0;
}
