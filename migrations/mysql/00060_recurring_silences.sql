-- +goose Up
-- schedule is a recurring silence's schedule as JSON ({"days","start","end","timezone"}),
-- NULL for a silence with fixed times. held_until is the end of the occurrence of a
-- recurring silence that held a message (NULL for a fixed silence): the message goes on
-- once that occurrence is over, though the silence itself goes on.
ALTER TABLE silences ADD COLUMN schedule VARCHAR(255) NULL;
ALTER TABLE message_silences ADD COLUMN held_until DATETIME(6) NULL;

-- +goose Down
ALTER TABLE message_silences DROP COLUMN held_until;
ALTER TABLE silences DROP COLUMN schedule;
