package redlock

// LossDetection is what the tests see of a factory's loss detector.
type LossDetection struct {
	On       bool // the factory has a detector
	Idle     bool // tracking is on towards a live subscriber on every node; no check queued or running
	Heard    int  // keys invalidated, watched or not (a flush counts one)
	Checks   int  // check rounds run
	Connects int  // subscriber connections made
}

// LossDetectionOf reports the state of f's loss detector.
func LossDetectionOf(f *Factory) LossDetection {
	if f.det == nil {
		return LossDetection{}
	}
	idle, heard, checks, connects := f.det.state()
	return LossDetection{On: true, Idle: idle, Heard: heard, Checks: checks, Connects: connects}
}
