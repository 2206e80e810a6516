//go:build !race

package race

// Enabled says whether this binary was built with -race.
const Enabled = false
