// Package delivery holds the rules of a message's life, as data and small pure
// functions, with no storage in them: the states a message may be in and the moves
// allowed between them, priorities and the queues they wait in, the retry policy by
// error class with an account's adjustments, quiet hours, and what a limit's use looks
// like.
//
// Where a rule goes: here, when it decides something about a message or an account
// (may it move, must it wait, how long). The store (models) asks these rules for its
// compare-and-set lists and keeps the queries; the sender (tasks) asks them what a
// failure or a quiet hour means; neither holds a rule of its own.
package delivery
