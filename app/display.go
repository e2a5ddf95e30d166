package main

// missingDisplay says what is missing when the workbench cannot open a
// window: on Linux and the BSDs the desktop build needs an X11 or Wayland
// display (DISPLAY or WAYLAND_DISPLAY), and without one GLFW panics with a
// stack trace. It returns "" when a display is set or the platform brings
// its own (Windows, macOS, the browser).
func missingDisplay(goos string, getenv func(string) string) string {
	switch goos {
	case "linux", "freebsd", "openbsd", "netbsd", "dragonfly":
	default:
		return ""
	}
	if getenv("DISPLAY") != "" || getenv("WAYLAND_DISPLAY") != "" {
		return ""
	}
	return "workbench: no display: neither DISPLAY nor WAYLAND_DISPLAY is set. " +
		"Run it in a desktop session, set DISPLAY (e.g. ssh -X, or xvfb-run for a virtual one), " +
		"or use the browser build: make web (make serve builds and serves it)"
}
