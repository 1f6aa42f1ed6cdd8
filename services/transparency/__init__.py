"""The audit log: finished hands and games' ends as leaves of an append-only Merkle tree,
signed checkpoints, and the proofs a player, a platform or a witness checks them with."""
