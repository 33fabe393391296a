class Tabs:
	def f(self, x):
		if x:
			return 1
		else:
			return 2

	def g(self):
		try:
			pass
		except OSError:
			pass
		return self.f(0)
