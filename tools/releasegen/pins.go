package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
)

const (
	kubernetesModule = "k8s.io/kubernetes"
	apiModule        = "k8s.io/api"
)

// Pin is one supported release: its minor ("1.34") and the module versions its facts are read from.
type Pin struct {
	Minor      string
	Kubernetes string
	API        string
}

// readPins parses the pin file: "minor kubernetes-version api-version" per line, # comments.
func readPins(path string) ([]Pin, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var pins []Pin
	scanner := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; scanner.Scan(); line++ {
		text := strings.TrimSpace(scanner.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		if len(fields) != 3 {
			return nil, fmt.Errorf("%s:%d: want \"minor kubernetes-version api-version\", got %q", path, line, text)
		}
		pin := Pin{Minor: fields[0], Kubernetes: fields[1], API: fields[2]}
		if _, err := parseMinor(pin.Minor); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, line, err)
		}
		pins = append(pins, pin)
	}
	if len(pins) == 0 {
		return nil, fmt.Errorf("%s: no releases pinned", path)
	}
	sort.Slice(pins, func(i, j int) bool { return minorLess(pins[i].Minor, pins[j].Minor) })
	return pins, nil
}

func writePins(path string, pins []Pin) error {
	var out strings.Builder
	out.WriteString("# Kubernetes releases the engine supports, read by releasegen.\n")
	out.WriteString("# minor  k8s.io/kubernetes  k8s.io/api (the same patch: the api tree that release was built with)\n")
	out.WriteString("# Re-pin to the newest patches on the module proxy: go run . -refresh\n")
	for _, pin := range pins {
		fmt.Fprintf(&out, "%s %s %s\n", pin.Minor, pin.Kubernetes, pin.API)
	}
	return os.WriteFile(path, []byte(out.String()), 0o644)
}

// parseMinor turns "1.34" into 34; only Kubernetes 1.x exists.
func parseMinor(minor string) (int, error) {
	rest, ok := strings.CutPrefix(minor, "1.")
	n, err := strconv.Atoi(rest)
	if !ok || err != nil || n < 0 {
		return 0, fmt.Errorf("release %q is not of the form 1.N", minor)
	}
	return n, nil
}

func minorLess(a, b string) bool {
	x, _ := parseMinor(a)
	y, _ := parseMinor(b)
	return x < y
}

// goCommand runs the go tool outside any module (so nothing touches this module's go.mod).
func goCommand(args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GO111MODULE=on")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// downloadDir returns the source tree of module@version in the module cache, downloading it if needed.
func downloadDir(module, version string) (string, error) {
	out, err := goCommand("mod", "download", "-json", module+"@"+version)
	if err != nil {
		return "", err
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %v", module, version, err)
	}
	if info.Error != "" || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", module, version, info.Error)
	}
	return info.Dir, nil
}

// semver is vMAJOR.MINOR.PATCH without pre-release suffix; ok is false for anything else.
func semver(version string) (major, minor, patch int, ok bool) {
	parts := strings.Split(strings.TrimPrefix(version, "v"), ".")
	if len(parts) != 3 || !strings.HasPrefix(version, "v") {
		return 0, 0, 0, false
	}
	numbers := make([]int, 3)
	for i, part := range parts {
		n, err := strconv.Atoi(part)
		if err != nil {
			return 0, 0, 0, false
		}
		numbers[i] = n
	}
	return numbers[0], numbers[1], numbers[2], true
}

// refreshPins re-pins every release from the oldest pinned one on to the newest patch the module proxy
// lists for k8s.io/kubernetes; newer minors on the proxy are added. The k8s.io/api version is the same patch.
func refreshPins(pins []Pin) ([]Pin, error) {
	out, err := goCommand("list", "-m", "-versions", kubernetesModule)
	if err != nil {
		return nil, err
	}
	apiOut, err := goCommand("list", "-m", "-versions", apiModule)
	if err != nil {
		return nil, err
	}
	apiVersions := map[string]bool{}
	for _, v := range strings.Fields(string(apiOut))[1:] {
		apiVersions[v] = true
	}
	oldest, _ := parseMinor(pins[0].Minor)
	newest := map[int]int{} // minor -> newest patch
	for _, v := range strings.Fields(string(out))[1:] {
		major, minor, patch, ok := semver(v)
		if !ok || major != 1 || minor < oldest {
			continue
		}
		if best, seen := newest[minor]; !seen || patch > best {
			newest[minor] = patch
		}
	}
	var minors []int
	for minor := range newest {
		minors = append(minors, minor)
	}
	sort.Ints(minors)
	var refreshed []Pin
	for _, minor := range minors {
		patch := newest[minor]
		api := fmt.Sprintf("v0.%d.%d", minor, patch)
		if !apiVersions[api] {
			return nil, fmt.Errorf("%s v1.%d.%d is on the proxy but %s %s is not", kubernetesModule, minor, patch, apiModule, api)
		}
		refreshed = append(refreshed, Pin{Minor: fmt.Sprintf("1.%d", minor), Kubernetes: fmt.Sprintf("v1.%d.%d", minor, patch), API: api})
	}
	return refreshed, nil
}
