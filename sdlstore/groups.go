package sdlstore

import (
	"bytes"
	"context"
	"slices"

	"github.com/gomodule/redigo/redis"
)

// A group is a Redis SET at the group's key ("{ns},group"), holding raw
// byte members, as in ricsdl and sdlgo.

// checkGroup validates the namespace and group name of a group call.
func (s *Store) checkGroup(ns, group string) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := checkNamespace(ns); err != nil {
		return err
	}
	return checkName("group", group)
}

// checkMembers validates a non-empty member list and returns it as
// command arguments after the group key.
func checkMembers(key string, members [][]byte) ([]any, error) {
	if len(members) == 0 {
		return nil, invalidArg("no members given")
	}
	args := make([]any, 0, 1+len(members))
	args = append(args, key)
	for i, m := range members {
		if m == nil {
			return nil, invalidArg("member %d is nil", i)
		}
		args = append(args, m)
	}
	return args, nil
}

// AddMember adds members to group in namespace ns (SADD); members already
// there are ignored.
func (s *Store) AddMember(ctx context.Context, ns, group string, members ...[]byte) error {
	if err := s.checkGroup(ns, group); err != nil {
		return err
	}
	args, err := checkMembers(nsKey(ns, group), members)
	if err != nil {
		return err
	}
	_, err = s.do(ctx, s.inst(ns), ns, "add member", "SADD", args...)
	return err
}

// RemoveMember removes members from group (SREM); absent ones are ignored.
// Redis deletes a group whose last member is removed.
func (s *Store) RemoveMember(ctx context.Context, ns, group string, members ...[]byte) error {
	if err := s.checkGroup(ns, group); err != nil {
		return err
	}
	args, err := checkMembers(nsKey(ns, group), members)
	if err != nil {
		return err
	}
	_, err = s.do(ctx, s.inst(ns), ns, "remove member", "SREM", args...)
	return err
}

// RemoveGroup deletes group and all its members.
func (s *Store) RemoveGroup(ctx context.Context, ns, group string) error {
	if err := s.checkGroup(ns, group); err != nil {
		return err
	}
	_, err := s.do(ctx, s.inst(ns), ns, "remove group", "DEL", nsKey(ns, group))
	return err
}

// GetMembers returns the members of group, sorted bytewise; an empty (or
// missing) group gives an empty slice.
func (s *Store) GetMembers(ctx context.Context, ns, group string) ([][]byte, error) {
	if err := s.checkGroup(ns, group); err != nil {
		return nil, err
	}
	ms, err := redis.ByteSlices(s.do(ctx, s.inst(ns), ns, "get members", "SMEMBERS", nsKey(ns, group)))
	if err != nil {
		return nil, replyErr("get members", err)
	}
	if ms == nil {
		ms = [][]byte{}
	}
	slices.SortFunc(ms, bytes.Compare)
	return ms, nil
}

// IsMember reports whether member is in group.
func (s *Store) IsMember(ctx context.Context, ns, group string, member []byte) (bool, error) {
	if err := s.checkGroup(ns, group); err != nil {
		return false, err
	}
	if err := checkValue("member", member); err != nil {
		return false, err
	}
	ok, err := redis.Bool(s.do(ctx, s.inst(ns), ns, "is member", "SISMEMBER", nsKey(ns, group), member))
	return ok, replyErr("is member", err)
}

// GroupSize returns the number of members of group; 0 when it is missing.
func (s *Store) GroupSize(ctx context.Context, ns, group string) (int64, error) {
	if err := s.checkGroup(ns, group); err != nil {
		return 0, err
	}
	n, err := redis.Int64(s.do(ctx, s.inst(ns), ns, "group size", "SCARD", nsKey(ns, group)))
	return n, replyErr("group size", err)
}
