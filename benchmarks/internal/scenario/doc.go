// Package scenario drives every strategy through the same steps (collectors
// joining, leaving and restarting, targets churning, jobs coming and going, a
// seeded random trace) and measures each step: balance, targets moved, the
// minimum the step required and the time it took. It also computes the rows
// of the stability command's table.
package scenario
