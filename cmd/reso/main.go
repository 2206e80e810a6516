// Command reso serves the reso example application on port 8000, with the
// bundled plugins (package app holds the program; reso -h lists the flags).
package main

import "github.com/reso-project/reso/app"

func main() { app.Main(app.Bundled()...) }
