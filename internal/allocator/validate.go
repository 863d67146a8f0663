package allocator

// ValidateConfig parses and validates the content of an allocator config
// file (targetallocator.yaml) exactly as Run does at start, and returns the
// first problem: an unknown key, a bad value, a duplicate job name. It reads
// no file, opens no connection and starts nothing (it only pins Prometheus'
// label-name validation to UTF-8, which every caller in this module wants),
// so the operator can call it on a rendered config before applying it.
// scrape_config_files are not read: they are relative to a file that does
// not exist yet.
func ValidateConfig(b []byte) error {
	_, err := parseConfig(b)
	return err
}
