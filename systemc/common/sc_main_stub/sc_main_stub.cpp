// libsystemc refers to sc_main. Programs that embed the simulator behind their
// own main() (the unit tests) get this weak definition; moehub-sim defines the
// real one.
extern "C" int sc_main(int, char**) __attribute__((weak));
extern "C" int sc_main(int, char**) { return 1; }
