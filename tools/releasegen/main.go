// Command releasegen reads what dra-migrate needs to know about each supported Kubernetes release
// (DRA feature gates, served resource.k8s.io versions, the fields of their types, claim quota rules)
// from the release's own Go sources, and writes it as a literal-only Python module.
//
//	go run . [-pins releases.txt] [-out FILE] [-source 1.34=KUBERNETES_DIR,API_DIR ...]
//	go run . -refresh      # re-pin releases.txt to the newest patches on the module proxy
//
// Sources come from the module cache (go mod download k8s.io/kubernetes@vX k8s.io/api@vY) unless
// -source names the trees of a release.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

type sourceFlags map[string][2]string

func (s sourceFlags) String() string { return fmt.Sprint(map[string][2]string(s)) }

func (s sourceFlags) Set(value string) error {
	minor, dirs, ok := strings.Cut(value, "=")
	kubernetesDir, apiDir, ok2 := strings.Cut(dirs, ",")
	if !ok || !ok2 {
		return fmt.Errorf("want MINOR=KUBERNETES_DIR,API_DIR, got %q", value)
	}
	s[minor] = [2]string{kubernetesDir, apiDir}
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "releasegen:", err)
		os.Exit(1)
	}
}

func run() error {
	pinsPath := flag.String("pins", "releases.txt", "file pinning the supported releases")
	outPath := flag.String("out", "", "Python module to write (default: stdout)")
	refresh := flag.Bool("refresh", false, "re-pin the releases file to the newest patches on the module proxy, then exit")
	sources := sourceFlags{}
	flag.Var(sources, "source", "MINOR=KUBERNETES_DIR,API_DIR: read a release from these trees (repeatable)")
	flag.Parse()

	pins, err := readPins(*pinsPath)
	if err != nil {
		return err
	}
	if *refresh {
		refreshed, err := refreshPins(pins)
		if err != nil {
			return err
		}
		return writePins(*pinsPath, refreshed)
	}
	releases := make([]*Release, 0, len(pins))
	for _, pin := range pins {
		dirs, given := sources[pin.Minor]
		if !given {
			if dirs[0], err = downloadDir(kubernetesModule, pin.Kubernetes); err != nil {
				return err
			}
			if dirs[1], err = downloadDir(apiModule, pin.API); err != nil {
				return err
			}
		}
		release, err := readRelease(pin, dirs[0], dirs[1])
		if err != nil {
			return fmt.Errorf("release %s (%s %s, %s %s): %v", pin.Minor, kubernetesModule, pin.Kubernetes, apiModule, pin.API, err)
		}
		releases = append(releases, release)
	}
	text := emitPython(releases)
	if *outPath == "" {
		_, err = os.Stdout.WriteString(text)
		return err
	}
	return os.WriteFile(*outPath, []byte(text), 0o644)
}
