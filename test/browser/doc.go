// Package browser checks the allocator's status page as a person sees it:
// rendered by headless Chromium, driven over the DevTools protocol
// (chromedp), against the API the same server answers.
//
// It is a module of its own so that chromedp is not a requirement of the
// main module (what a user of apis or of the binaries pulls); it reaches the
// server through its exported API only. The test needs Debian's chromium at
// /usr/bin/chromium (`make browser` installs it); without it the test
// skips, unless SHARDWISE_REQUIRE_CHROMIUM is set, as `make test` does.
package browser
