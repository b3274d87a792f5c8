package tasks

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"herald/channels"
	"herald/delivery"
	"herald/models"
	"herald/sending"
)

// A group robot account holds one robot or a pool of them (channels.RobotCount), and
// the platforms count each robot's posts on its own: a pool of two DingTalk robots takes
// 40 posts a minute, neither ever more than 20 in any minute. So each robot has its own
// logs in the limiter, under the account's hash tag, and a post is admitted against one
// robot of the pool: the robots are tried in turn from one past the last one chosen, so
// posts spread across the pool, and the first with room takes the post. The worker tells
// the adapter which robot to post through (channels.Message.Robot).
//
// A robot the platform refused as too busy for a while (DingTalk's 130101: nothing for
// ten minutes) is held: a key in Redis says until when, and every worker skips it until
// then while the pool's other robots go on. Should Redis lose the hold, the platform
// refuses once more and the hold is set again: nothing is lost, since the message stays
// in MySQL, waiting as rate_limited.

// WindowRobotHold names a refusal because every robot of the pool that had room is held
// after the platform refused it.
const WindowRobotHold = "robot_hold"

// robotKeys are the logs of one robot of an account's pool (the same three as
// limiterKeys, per robot) and, fourth, its hold.
func robotKeys(accountID int64, robot int, recipient string) []string {
	base := "herald:lim:{" + strconv.FormatInt(accountID, 10) + "}:robot:" + strconv.Itoa(robot)
	return []string{base + ":log", base + ":r:" + recipient, base + ":waiting", base + ":hold"}
}

// AcquireRobot asks to post a message of a group robot account through one robot of
// its pool of robots, each robot under the account's limits on its own. The admission
// names the robot (Admission.Robot); it is never nil when allowed. When no robot has
// room, the decision's Wait is the shortest until one has, and its Window names what
// held the robot that frees first.
func (l *Limiter) AcquireRobot(ctx context.Context, accountID int64, robots int, limits delivery.Limits, recipient string, priority models.Priority, token string) (Decision, error) {
	holds, err := l.RobotHolds(ctx, accountID, robots)
	if err != nil {
		return Decision{}, err
	}
	start := int(l.robotTurn.Add(1) % uint64(robots))
	best := Decision{Wait: -1}
	for k := range robots {
		robot := (start + k) % robots
		d := Decision{Wait: holds[robot], Window: WindowRobotHold}
		if holds[robot] <= 0 {
			if d, err = l.acquire(ctx, robotKeys(accountID, robot, recipient)[:3], limits, priority, token); err != nil {
				return Decision{}, err
			}
			if d.Allowed {
				if d.Admission == nil {
					d.Admission = &Admission{}
				}
				d.Admission.robot = robot
				return d, nil
			}
		}
		if best.Wait < 0 || d.Wait < best.Wait {
			best = d
		}
	}
	return best, nil
}

// Robot is the robot of the pool an admission is for (0 for an account of one robot).
func (a *Admission) Robot() int { return a.robot }

// HoldRobot stops every worker posting through one robot of an account's pool for d,
// after the platform refused it for that long.
func (l *Limiter) HoldRobot(ctx context.Context, accountID int64, robot int, d time.Duration) error {
	now, err := l.clock(ctx)
	if err != nil {
		return fmt.Errorf("tasks: hold robot: %w", err)
	}
	// The key outlives the hold a little: its value, not its expiry, says when it ends,
	// on the limiter's clock.
	key := robotKeys(accountID, robot, "")[3]
	if err := l.rdb.Set(ctx, key, now.Add(d).UnixMicro(), d+time.Minute).Err(); err != nil {
		return fmt.Errorf("tasks: hold robot: %w", err)
	}
	return nil
}

// RobotHolds says, for each robot of an account's pool, how long it is still held (0
// for a robot that is not).
func (l *Limiter) RobotHolds(ctx context.Context, accountID int64, robots int) ([]time.Duration, error) {
	keys := make([]string, robots)
	for i := range keys {
		keys[i] = robotKeys(accountID, i, "")[3]
	}
	now, err := l.clock(ctx)
	if err != nil {
		return nil, fmt.Errorf("tasks: robot holds: %w", err)
	}
	vals, err := l.rdb.MGet(ctx, keys...).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("tasks: robot holds: %w", err)
	}
	out := make([]time.Duration, robots)
	for i, v := range vals {
		s, _ := v.(string)
		if until, err := strconv.ParseInt(s, 10, 64); err == nil {
			out[i] = max(time.UnixMicro(until).Sub(now), 0)
		}
	}
	return out, nil
}

// AccountUsage reports an account's calls in each of its limited windows right now: a
// group robot account's robots together, against their limits together.
func (l *Limiter) AccountUsage(ctx context.Context, a *sending.Account) ([]delivery.Usage, error) {
	n := channels.RobotCount(a.Platform, a.Config)
	if n == 0 {
		return l.Usage(ctx, a.ID, a.Limits)
	}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = robotKeys(a.ID, i, "")[0]
	}
	return l.usage(ctx, keys, a.Limits)
}

// acquireFor is how a message of an account asks the limiter for a call: against one
// robot of a group robot account's pool, else against the account.
func (s *Sender) acquireFor(ctx context.Context, m *models.Message, acct *sending.Account) (Decision, error) {
	if n := channels.RobotCount(acct.Platform, acct.Config); n > 0 {
		return s.limiter.AcquireRobot(ctx, acct.ID, n, acct.Limits, m.Address, m.Priority, m.ID)
	}
	return s.limiter.Acquire(ctx, acct.ID, acct.Limits, m.Address, m.Priority, m.ID)
}

// holdRobotAfter holds the robot a post went through when the platform refused it as
// too busy for a stated while (DingTalk's 130101 for ten minutes), so that no worker
// posts through it before then; the message itself waits as the policy says.
func (s *Sender) holdRobotAfter(acct *sending.Account, adm *Admission, err error) {
	ce := channels.Classify(err)
	if adm == nil || ce == nil || ce.Class != channels.RateLimited || ce.RetryAfter <= 0 || !channels.IsRobot(acct.Platform) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if herr := s.limiter.HoldRobot(ctx, acct.ID, adm.Robot(), ce.RetryAfter); herr != nil {
		// The platform refuses again and the hold is set then.
		s.log.Warn("hold a refusing robot", "account", acct.Name, "robot", adm.Robot(), "error", herr)
	}
}
