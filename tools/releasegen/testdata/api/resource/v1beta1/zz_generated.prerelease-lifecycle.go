package v1beta1

func (in *Widget) APILifecycleIntroduced() (major, minor int) {
	return 1, 38
}

func (in *Widget) APILifecycleDeprecated() (major, minor int) {
	return 1, 41
}

func (in *Widget) APILifecycleRemoved() (major, minor int) {
	return 1, 44
}

func (in *WidgetList) APILifecycleRemoved() (major, minor int) {
	return 1, 44
}
