// Package controller holds the operator's reconcilers. Each reconcile reads the
// full desired state, builds the objects with package manifests, writes only
// what differs, prunes what is no longer desired and records status.
package controller
