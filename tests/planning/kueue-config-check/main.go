// Command kueue-config-check loads a Kueue Configuration file the way Kueue's manager does at start-up
// (sigs.k8s.io/kueue pkg/config Load: strict decoding into config.kueue.x-k8s.io/v1beta2, defaulting,
// then Kueue's validation), and says whether Kueue would start with it.
//
// Usage: kueue-config-check FILE
// Exit 0 and "valid" on stdout when Kueue accepts FILE; exit 1 and Kueue's own error on stderr when it
// refuses it; exit 2 on wrong usage.
//
// Only the integrations pkg/config itself imports are registered (the pod integration): a Configuration
// whose integrations.frameworks names another one is refused here although Kueue's manager, which
// imports every integration, would accept it.
package main

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	configv1beta1 "sigs.k8s.io/kueue/apis/config/v1beta1"
	configv1beta2 "sigs.k8s.io/kueue/apis/config/v1beta2"
	"sigs.k8s.io/kueue/pkg/config"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: kueue-config-check FILE")
		os.Exit(2)
	}
	// The config API versions and the core types cmd/kueue/main.go puts in its scheme: both config
	// versions decode, and the pod integration's kind resolves for Kueue's duplicate-framework check.
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, configv1beta1.AddToScheme, configv1beta2.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	if _, _, err := config.Load(scheme, os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("valid")
}
