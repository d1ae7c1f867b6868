//go:build tools

// Package tools pins sigs.k8s.io/cluster-api so that its core manager and clusterctl build from this module.
package tools

import (
	_ "sigs.k8s.io/cluster-api/cmd/clusterctl/cmd"
	_ "sigs.k8s.io/cluster-api/core/setup"
)
