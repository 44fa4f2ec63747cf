## The bin page (/bins/{bin}).

bin-title = Бин { $bin } · hookbin
copy = Копировать
bin-your-url = Ваш URL
bin-expires = Удаляется
bin-cap = { $count ->
    [one] / { $n } запрос
    [few] / { $n } запроса
   *[many] / { $n } запросов
}
bin-requests = Запросы
bin-clear-confirm = Удалить все запросы в этом бине?
bin-clear = Очистить
bin-search-label = Поиск по запросам
bin-search-help = Условия: method:, path:, header:ИМЯ, header:ИМЯ=ТЕКСТ, body:, просто слово или "текст в кавычках"; -условие исключает
bin-search = Найти
bin-search-clear = Сбросить
bin-search-error = Не удалось выполнить поиск: { $error }
bin-filter-note = Показаны только запросы, подходящие под поиск, в том числе новые:
bin-newest = ← Самые новые запросы
bin-newer = Пришли новые запросы: показать их
bin-no-match = Ни один запрос не подходит под этот поиск.
bin-no-match-page = Ни один запрос на этой странице не подходит под этот поиск.
bin-no-match-stopped = Поиск остановился раньше времени: продолжите его по ссылке «Более старые запросы».
bin-waiting = Ждём первый запрос…
bin-older = Более старые запросы →
bin-row-truncated = (обрезан)
bin-selected = Выбранный запрос
bin-all-requests = ← Все запросы
bin-gone-title = Этого запроса больше нет
bin-gone = Его удалили или вытеснили, чтобы освободить место для новых.
bin-fix-title = Исправьте поиск
bin-fix = Что не так с запросом поиска, написано у поля поиска выше.
bin-nomatch-title = Ничего не найдено
bin-nomatch = Пока ни один запрос не подходит под этот поиск. Новые подходящие появятся здесь сразу.
bin-waiting-hint = Отправьте что угодно на ваш URL, и запрос сразу появится здесь, без перезагрузки.
bin-pick-title = Выберите запрос
bin-pick = Выберите запрос в списке, чтобы увидеть его здесь.
bin-or-paste = Или вставьте ваш URL в настройки webhook у сервиса-отправителя:
bin-settings = Настройки бина
bin-response = Ответ
bin-not-saved = Не сохранено: { $error }
bin-status = Статус
bin-delay = Задержка (мс)
bin-headers = Заголовки
bin-headers-hint = по одному на строку,
bin-body = Тело
bin-save = Сохранить ответ
bin-reset = Вернуть ответ по умолчанию (200 ok)
bin-delete-confirm = Удалить этот бин и все его запросы? URL перестанет работать.
bin-delete = Удалить бин
bin-delete-hint = URL перестанет работать, все запросы будут удалены.
bin-answers-default = Отвечает 200 с телом "ok" (по умолчанию).
bin-answers = Отвечает { $status }
bin-answers-headers = { $count ->
    [one] { $n } заголовок
    [few] { $n } заголовка
   *[many] { $n } заголовков
}
bin-answers-body = тело { $size }
bin-answers-delay = с задержкой { $ms } мс
bin-form-line = заголовки, строка { $line }: ожидалось "Имя: значение", получено { $got }
bin-private-label = Приватный · ссылка для просмотра
bin-private-hint = Только эта ссылка открывает страницы и API бина; URL для приёма этого не может. hookbin хранит только её хеш: берегите её.
bin-actions = Действия с бином
bin-export-har = Экспорт HAR
bin-export-json = Экспорт JSON
bin-delete-short = Удалить бин
bin-follow = Следить за новыми
