package types

type InstanceUid [16]byte
