#include <systemc>
