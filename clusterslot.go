package redlock

import "strconv"

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// ClusterKeySlot is the hash slot of key in a Redis Cluster, as CLUSTER
// KEYSLOT computes it (hash tags included), for adapters that pick a key
// in a master's slot.
func ClusterKeySlot(key string) int { return keySlot(key) }

// keySlot is the hash slot of key, as Redis Cluster computes it: CRC16
// (XMODEM) of the key's hash tag, the part between its first "{" and the
// next "}" when that part is not empty, else of the whole key, modulo
// 16384.
func keySlot(key string) int {
	if open := indexByte(key, '{', 0); open >= 0 {
		if end := indexByte(key, '}', open+1); end > open+1 {
			key = key[open+1 : end]
		}
	}
	return int(crc16(key) % clusterSlots)
}

// indexByte is the index of the first c in s at or after from, or -1.
func indexByte(s string, c byte, from int) int {
	for i := from; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), the checksum
// Redis Cluster hashes keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// tagOf returns the hash tag that the lock keys of a master owning the
// slots owns reports carry: the smallest decimal number whose slot it owns,
// with that slot. Every client that reads the same slot map chooses the
// same tag, so that all of them meet on one key per master and lock. It
// returns "" and -1 for a master that owns no slot. (The numbers below
// 100,000 hash to every slot.)
func tagOf(owns func(slot int) bool) (string, int) {
	for i := range 100_000 {
		tag := strconv.Itoa(i)
		if s := int(crc16(tag) % clusterSlots); owns(s) {
			return tag, s
		}
	}
	return "", -1
}

// untagged strips the hash tag "{digits}" a cluster node puts in front of
// a lock key (clusterNode), and returns key as it is without one.
func untagged(key string) string {
	if len(key) < 3 || key[0] != '{' {
		return key
	}
	for i := 1; i < len(key); i++ {
		switch c := key[i]; {
		case c == '}' && i > 1:
			return key[i+1:]
		case c < '0' || c > '9':
			return key
		}
	}
	return key
}
