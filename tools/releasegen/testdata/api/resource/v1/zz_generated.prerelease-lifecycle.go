package v1

func (in *Widget) APILifecycleIntroduced() (major, minor int) {
	return 1, 39
}
