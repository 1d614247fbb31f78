package engine

import "time"

// ClockCorrected is a timestamp assigner for events that buffer on a device
// (a phone offline for a day) and carry three times: when the event
// happened and when it was sent, both by the device's clock, and when it was
// received, by the server's clock. The device clock may be wrong; receive -
// send estimates its offset (ignoring network delay, which is small next to
// a wrong clock), and the event time is corrected by it:
//
//	event + (received - sent)
//
// Use it as the timestamp function of a watermark strategy:
//
//	weir.BoundedOutOfOrderness(time.Minute, weir.ClockCorrected(
//		func(e Tap) time.Time { return e.DeviceTime },
//		func(e Tap) time.Time { return e.SentAt },
//		func(e Tap) time.Time { return e.ReceivedAt }))
func ClockCorrected[T any](event, sent, received func(T) time.Time) func(T) time.Time {
	return func(v T) time.Time {
		return event(v).Add(received(v).Sub(sent(v)))
	}
}
